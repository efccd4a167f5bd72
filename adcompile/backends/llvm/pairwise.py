"""Float sums and means in numpy's order of additions (LLVM backend): np.sum, np.mean,
.sum(), .mean() of float arrays, np.mean of integer and boolean arrays, np.trace of floats.

numpy reduces with its iterator and calls the add loop on pieces ("calls") of the elements:
each output element starts at 0 (np.sum([-0.0]) is 0.0) and adds the calls in turn, each
summed by `pairwise_sum` (PW_BLOCK: fewer than 8 elements in order from 0; up to 128 into 8
accumulators r[j] += a[i + j] combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)),
then the rest in order; more are split at n / 2 rounded down to a multiple of 8 and the halves
added). float32 adds in float32; integer and boolean means add float64 conversions; a mean is
then the sum divided by the count in float64 (rounded to float32 for float32), as numpy does.

Which elements make a call is the iterator's business (numpy/_core/src/multiarray/
nditer_constr.c), reproduced here exactly (`order_fn`, `sum_plan_fn`, checked against numpy
on thousands of layouts): the axes are ordered by the input's |stride| (smallest innermost,
ties and axes of length 1 or stride 0 keeping C order; negative strides are not flipped, so
x[::-1] adds in its own order), neighbouring axes that are both reduced or both kept and
whose strides chain are merged, and `npyiter_find_buffering_setup`'s cost model picks the
block of inner axes one call may span. So a reduction whose elements form one strided run
(a 1-d array with any stride, a C- or F-contiguous array) is one pairwise sum over the run in
memory order; reducing the innermost axis gives one pairwise sum per output element; when the
kept axes are innermost each output adds its elements one by one (np.sum(a, axis=0) of a
C-ordered matrix); other layouts are cut into the calls numpy makes (up to np.getbufsize()
= 8192 elements, copied into a buffer when they do not form one run). Integer and boolean
means are buffered (cast) in 8192-element calls too.

An elementwise expression (a lazy value, fusion.py) is what numpy sums after it made a
temporary of it: each ufunc's result is laid out in the order its operands' strides give
(nditer's K order, C order winning a conflict), so a 1-d expression adds in its own order,
an n-d one in its temporary's memory order: read in place when every leaf is one run in that
order, else computed into a temporary with that layout first. A sum over the last axis alone of
a C-contiguous array, or of an expression whose temporary would be C-ordered, is one pairwise
sum per row (numpy hands its add loop each row whole), read in place from the leaves with no
plan worked out (row_sums); a row of up to PW_BLOCK elements is summed in the row loop itself
(block_here), a longer one by a call.

The code: `adc.pairwise.*` is numpy's pairwise_sum for one kind of operand (an array of a
dtype, or an expression; constant strides stay constants), recursive, its 8 accumulators two
vectors; `adc.axis_order.N` and `adc.sum_plan.N` work out the calls once per reduction, and
`adc.sum_calls.*` adds one output element's calls: all shared by the module's reductions and
kept out of line (they are control, not arithmetic).

What is not numpy's: an elementwise result the kernel computed into memory (not fused: used
by a view, a product, returned...) is C-ordered, where numpy lays it out in its operands'
order, so a later sum of it follows C order; numpy's elision of temporaries (a Python operator
on a temporary of 256 KiB or more writes into it, keeping its layout) is not modelled; a leaf
whose stride is 0 along an axis longer than 1 (np.broadcast_to) counts as broadcast when a
temporary's layout is worked out; an astype's result is laid out by the ufunc rule (numpy's
copy sorts strides its own way, the same but for zero strides).
"""

import hashlib

import llvmlite.ir as ir

from adcompile.backends.llvm.values import (F64, I1, I64, PTR, REG, ArrayV, LazyNode, LazyV,
                                            Pack, i64, opaque, zero)

PW_BLOCK = 128  # numpy's PW_BLOCKSIZE: pairwise_sum adds up to this many in one block
BUFSIZE = 8192  # numpy's default ufunc buffer (np.getbufsize()): the longest buffered call
FLOATS = ("f32", "f64")
# axis_order tests for C order inline (c_ordered) up to this many stride comparisons (axes
# pairs times operands), else it calls order_fn
_C_ORDER_CHECKS = 32
_PLAN_HEAD = 5  # a plan: kr, seq, nb, P, L, then the reduced dims' sizes and strides


class PairwiseLowering:
    """Sums in numpy's order, mixed into the array lowering (arrays.ArrayLowering)."""

    # -- reductions -----------------------------------------------------------------------
    def numpy_sum(self, op, x, axes):
        """np.sum / np.mean (op.prim) of x over `axes`, as numpy adds: the result register,
        or a new array."""
        dtype = x.dtype if x.dtype in FLOATS else "f64"
        count = self.count([x.shape[a] for a in axes])
        result = op.results[0].type.dtype

        def finish(value):
            return self.sum_result(op.prim, value, dtype, result, count)

        if len(axes) == x.ndim:  # one result (kept as an array with keepdims)
            return self.reduce_into(op, x, axes, lambda base: finish(self.total(x, dtype,
                                                                                op.loc)))
        out = self.reduced_array(op, x, axes)
        order = self.lazy_order(x) if isinstance(x, LazyV) else None  # (worked out once)
        if list(axes) != [x.ndim - 1] or dtype != x.dtype:
            self.planned_axis_sum(op, x, axes, dtype, finish, out, order)
            return out[0]
        with self.b.if_else(self.rows_in_order(x, order)) as (rows, planned):
            with rows:
                self.row_sums(x, dtype, finish, out)
            with planned:
                self.planned_axis_sum(op, x, axes, dtype, finish, out, order)
        return out[0]

    def rows_in_order(self, x, perm):
        """Whether numpy sums x over its last axis as one pairwise sum per row, in place:
        x (an expression: its temporary, whose axis order is `perm`) is C-contiguous, so
        nditer keeps the last axis innermost and hands each row to the add loop whole."""
        b = self.b
        if isinstance(x, LazyV):
            ordered = ir.Constant(I1, 1)
            for k, p in enumerate(perm):
                ordered = b.and_(ordered, b.icmp_signed("==", p, i64(x.ndim - 1 - k)))
            return ordered
        ordered, step = ir.Constant(I1, 1), i64(1)
        for n, s in zip(reversed(x.shape), reversed(x.strides)):
            fits = b.or_(b.icmp_signed("==", n, i64(1)), b.icmp_signed("==", s, step))
            ordered, step = b.and_(ordered, fits), b.mul(step, n)
        return ordered

    def row_sums(self, x, dtype, finish, out):
        """out[j] = finish(0 + pairwise(row j of x)) (see rows_in_order): an expression's
        rows are read from its leaves, with no temporary and no plan."""
        out, out_strides = out
        n, stride = x.shape[-1], x.strides[-1]

        def one(offsets):
            row = self.pairwise(x, offsets[1], n, stride, dtype, short=True)
            value = self.b.fadd(zero(REG[dtype]), row, flags=self.flags)
            self.write(out, offsets[0], finish(value), out.dtype)

        self.parallel_loops(x.shape[:-1], [out_strides, x.strides[:-1]], one,
                            work=self.count(x.shape))

    def planned_axis_sum(self, op, x, axes, dtype, finish, out, order):
        """axis_sum over numpy's plan, an expression computed into its temporary (in the
        axis order `order`, lazy_order) first."""
        temp = None
        if isinstance(x, LazyV):
            x = temp = self.temporary(x, order, op.loc)
        self.axis_sum(op, x, axes, dtype, finish, out)
        if temp is not None:
            self.release(temp)

    def axis_sum(self, op, x, axes, dtype, finish, out):
        """A sum over some axes of array x into the new array `out` (with its strides along
        x's kept axes): when numpy's iteration has kept axes innermost, out[j] += x[i, j]
        streams over x (each output adds its elements in turn); else each output adds its
        calls (plan_sum). finish(sum) is the result."""
        b = self.b
        plan = self.sum_plan(x, axes, dtype != x.dtype)
        buffer = self.call_buffer(plan, dtype, op.loc)
        nonempty = b.icmp_signed("!=", self.count([x.shape[a] for a in axes]), i64(0))
        out, out_strides = out
        kept = [a for a in range(x.ndim) if a not in axes]
        shape, strides = [x.shape[a] for a in kept], [x.strides[a] for a in kept]

        def add(offsets):
            value = self.cast_to(self.read(x, offsets[1]), x.dtype, dtype)
            total = b.fadd(self.read(out, offsets[0]), value, flags=self.flags)
            self.write(out, offsets[0], total, dtype)

        def one(offsets):
            value = self.plan_sum(x, offsets[1], plan, buffer, dtype, nonempty)
            self.write(out, offsets[0], finish(value), out.dtype)

        with b.if_else(plan.seq) as (streaming, calls):
            with streaming:
                self.zero_fill(out)
                with b.if_then(nonempty):
                    self.odometer(plan, i64(0), i64(0), lambda offset: self.loops(
                        shape, [out_strides, strides], add, bases=[i64(0), offset]))
                if op.prim == "mean":
                    self.loops(shape, [out_strides], lambda offsets: self.write(
                        out, offsets[0], finish(self.read(out, offsets[0])), out.dtype))
            with calls:  # each output on its own, but for the buffer numpy's calls share
                work = b.select(b.icmp_signed(">", plan.nb, i64(1)), i64(0),
                                self.count(x.shape))
                self.parallel_loops(shape, [out_strides, strides], one, work=work)
        self.drop_buffer(plan, buffer)
        return out

    def total(self, x, dtype, loc):
        """0 + every element of x (converted to `dtype`) in numpy's calls."""
        cast = x.dtype != dtype
        if x.ndim <= 1:
            return self.added(x, i64(0), _one(x.shape), _first(x.strides, x), dtype, cast)
        if isinstance(x, LazyV):
            return self.lazy_total(x, dtype, cast)
        plan = self.sum_plan(x, range(x.ndim), cast)
        buffer = self.call_buffer(plan, dtype, loc)
        nonempty = self.b.icmp_signed("!=", self.count(x.shape), i64(0))
        value = self.plan_sum(x, i64(0), plan, buffer, dtype, nonempty)
        self.drop_buffer(plan, buffer)
        return value

    def call_buffer(self, plan, dtype, loc):
        """numpy's buffer for calls that are not one run, allocated only when the plan has
        some (its owner and data are null otherwise); release it with drop_buffer."""
        b = self.b
        obj, data = self.scratch(PTR, "buffer"), self.scratch(PTR, "buffer.data")
        for slot in (obj, data):
            b.store(ir.Constant(PTR, None), slot)
        with b.if_then(b.icmp_signed(">", plan.nb, i64(1))):
            made = self.new_array(dtype, [plan.L], loc)
            b.store(made.obj, obj)
            b.store(made.data, data)
        return ArrayV(dtype, b.load(obj, typ=PTR), b.load(data, typ=PTR), [plan.L], [i64(1)],
                      "alloc")

    def drop_buffer(self, plan, buffer):
        with self.b.if_then(self.b.icmp_signed(">", plan.nb, i64(1))):
            self.release(buffer)

    def sum_result(self, prim, value, dtype, result, count):
        """A sum of `dtype` as the reduction's result: a mean divides by the count in
        float64, as numpy's mean does (float32 rounded back)."""
        if prim == "mean":
            value = self.b.fdiv(self.cast_to(value, dtype, "f64"),
                                self.b.sitofp(count, F64), flags=self.flags)
            dtype = "f64"
        return self.cast_to(value, dtype, result)

    def added(self, x, base, n, stride, dtype, cast):
        """0 + the n elements of x at base + i * stride added as numpy's calls (one, or
        BUFSIZE-element ones for a cast). (Summing a short one here, as row_sums do, took
        kmeans' mask sum from 10 % of its gradient to 6 % but made gmm's gradient module 3.5 %
        larger, and gmm's cold compile is the one near its bound of a second.)"""
        acc = self.scratch(REG[dtype], "sum")
        self.b.store(zero(REG[dtype]), acc)
        self.add_calls(acc, x, base, n, stride, i64(BUFSIZE) if cast else n, dtype)
        return self.b.load(acc, typ=REG[dtype])

    def add_calls(self, acc, x, base, n, stride, length, dtype, short=False):
        """acc += pairwise(call) for the calls of `length` elements (the last one shorter)
        that the n elements of x at base + i * stride make, in turn (`short`: see
        pairwise)."""
        b = self.b
        start = self.scratch(I64, "call")
        b.store(i64(0), start)

        def call():
            c = b.load(start, typ=I64)
            left = b.sub(n, c)
            size = b.select(b.icmp_signed("<", left, length), left, length)
            value = self.pairwise(x, self.advance(base, c, stride), size, stride, dtype, short)
            b.store(b.fadd(b.load(acc, typ=REG[dtype]), value, flags=self.flags), acc)
            b.store(b.add(c, length), start)

        while_loop(b, lambda: b.icmp_signed("<", b.load(start, typ=I64), n), call)

    # -- n-d arrays: numpy's calls ---------------------------------------------------------
    def sum_plan(self, x, axes, cast):
        """Run sum_plan_fn on x's shape and strides (once per reduction)."""
        b = self.b
        n = x.ndim
        cells = [self.scratch(ir.ArrayType(I64, n), name) for name in ("shape", "strides",
                                                                        "reduced")]
        for k in range(n):
            for cell, value in zip(cells, (x.shape[k], x.strides[k], i64(int(k in axes)))):
                b.store(value, _at(b, cell, i64(k)))
        plan = self.scratch(ir.ArrayType(I64, _PLAN_HEAD + 2 * n), "plan")
        b.call(sum_plan_fn(self.module, n), cells + [i64(int(cast)), plan])
        return _Plan(b, plan, n)

    def plan_sum(self, x, base, plan, buffer, dtype, nonempty):
        """One output element of array x: 0 + its calls (see sum_plan_fn), its elements from
        `base` (none unless `nonempty`), by a function the module's reductions of the same
        kind share (calls_sum)."""
        b = self.b
        out = self.scratch(REG[dtype], "sum")
        b.store(zero(REG[dtype]), out)
        with b.if_then(nonempty):
            b.call(self.calls_fn(x, plan.ndim, dtype),
                   [self.ctx, x.data, base, plan.cell, buffer.data, out])
        return b.load(out, typ=REG[dtype])

    def calls_fn(self, x, ndim, dtype):
        """`i32 adc.sum_calls.K(ctx, data, base, plan*, buffer, out*)`: calls_sum."""
        name = f"adc.sum_calls.{x.dtype}.{x.origin}.{dtype}.{ndim}"
        fn = self.module.globals.get(name)
        if fn is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(ir.IntType(32), [PTR, PTR, I64, PTR,
                                                                        PTR, PTR]), name=name)
        _out_of_line(fn)
        sub = self.sub_lowering(fn)
        _, data, base, cell, buffer, _ = fn.args
        value = sub.calls_sum(ArrayV(x.dtype, None, data, [], [], x.origin), base,
                              _Plan(sub.b, cell, ndim), ArrayV(dtype, None, buffer, [], [],
                                                               "alloc"), dtype)
        sub.b.store(value, sub.out)
        sub.finish()
        if not hasattr(self, "_scopes") and hasattr(sub, "_scopes"):
            self._scopes = sub._scopes
        return fn

    def calls_sum(self, x, base, plan, buffer, dtype):
        """0 + the calls of one output element (a nonempty one): each one run of the
        innermost dim, or a block of several dims copied into `buffer`."""
        b = self.b
        acc = self.scratch(REG[dtype], "sum")
        b.store(zero(REG[dtype]), acc)
        with b.if_else(b.icmp_signed("==", plan.nb, i64(1))) as (run, block):
            with run:
                self.odometer(plan, i64(1), base, lambda offset: self.add_calls(
                    acc, x, offset, plan.size(i64(0)), plan.stride(i64(0)), plan.L, dtype,
                    short=True))
            with block:
                self.odometer(plan, plan.nb, base, lambda offset: self.buffered(
                    acc, x, offset, plan, buffer, dtype))
        return b.load(acc, typ=REG[dtype])

    def odometer(self, plan, lo, base, body):
        """body(offset) for every index of the plan's reduced dims lo..kr-1 (the first
        fastest), starting from `base`."""
        b = self.b
        index = self.scratch(ir.ArrayType(I64, plan.ndim), "index")
        offset, d = self.scratch(I64, "offset"), self.scratch(I64, "dim")
        b.store(lo, d)

        def clear():
            k = b.load(d, typ=I64)
            b.store(i64(0), _at(b, index, k))
            b.store(b.add(k, i64(1)), d)

        while_loop(b, lambda: b.icmp_signed("<", b.load(d, typ=I64), plan.kr), clear)
        b.store(base, offset)
        head = self.func.append_basic_block("odometer.body")
        carry = self.func.append_basic_block("odometer.carry")
        step = self.func.append_basic_block("odometer.step")
        done = self.func.append_basic_block("odometer.end")
        b.branch(head)
        b.position_at_end(head)
        body(b.load(offset, typ=I64))
        b.store(lo, d)
        b.branch(carry)
        b.position_at_end(carry)
        k = b.load(d, typ=I64)
        b.cbranch(b.icmp_signed("<", k, plan.kr), step, done)
        b.position_at_end(step)
        cell = _at(b, index, k)
        i = b.add(b.load(cell, typ=I64), i64(1))
        b.store(i, cell)
        stride = plan.stride(k)
        b.store(b.add(b.load(offset, typ=I64), stride), offset)
        more = b.icmp_signed("<", i, plan.size(k))
        wrap = self.func.append_basic_block("odometer.wrap")
        b.cbranch(more, head, wrap)
        b.position_at_end(wrap)
        b.store(b.sub(b.load(offset, typ=I64), b.mul(i, stride)), offset)
        b.store(i64(0), cell)
        b.store(b.add(k, i64(1)), d)
        b.branch(carry)
        b.position_at_end(done)

    def buffered(self, acc, x, base, plan, buffer, dtype):
        """The calls of one block of the dims 0..nb-1 (P elements from `base`): each copied
        into `buffer` in the iteration's order, then added pairwise (numpy's buffering)."""
        b = self.b
        index = self.scratch(ir.ArrayType(I64, plan.ndim), "index")
        offset, start = self.scratch(I64, "offset"), self.scratch(I64, "call")
        for k in range(plan.ndim):
            b.store(i64(0), _at(b, index, i64(k)))
        b.store(base, offset)
        b.store(i64(0), start)

        def next_element():  # one step of the odometer over the dims 0..nb-1
            d = self.scratch(I64, "dim")
            b.store(i64(0), d)

            def carry():
                k = b.load(d, typ=I64)
                cell = _at(b, index, k)
                i = b.add(b.load(cell, typ=I64), i64(1))
                b.store(i, cell)
                stride = plan.stride(k)
                b.store(b.add(b.load(offset, typ=I64), stride), offset)
                last = b.icmp_signed("==", b.add(k, i64(1)), plan.nb)
                wraps = b.and_(b.icmp_signed("==", i, plan.size(k)), b.not_(last))
                with b.if_then(wraps):
                    b.store(b.sub(b.load(offset, typ=I64), b.mul(i, stride)), offset)
                    b.store(i64(0), cell)
                b.store(b.select(wraps, b.add(k, i64(1)), plan.nb), d)

            while_loop(b, lambda: b.icmp_signed("<", b.load(d, typ=I64), plan.nb), carry)

        def call():
            c = b.load(start, typ=I64)
            left = b.sub(plan.P, c)
            size = b.select(b.icmp_signed("<", left, plan.L), left, plan.L)

            def copy(t):
                self.write(buffer, t, self.read(x, b.load(offset, typ=I64)), x.dtype)
                next_element()

            self.loop(size, copy)
            value = self.pairwise(buffer, i64(0), size, i64(1), dtype)
            b.store(b.fadd(b.load(acc, typ=REG[dtype]), value, flags=self.flags), acc)
            b.store(b.add(c, plan.L), start)

        while_loop(b, lambda: b.icmp_signed("<", b.load(start, typ=I64), plan.P), call)

    # -- elementwise expressions: numpy's temporaries --------------------------------------
    def lazy_total(self, x, dtype, cast):
        """The sum of every element of an n-d lazy value: numpy sums its temporary, one run
        in the temporary's layout. Read in place when each leaf is one run in that order,
        else computed into a temporary first."""
        b = self.b
        perm = self.lazy_order(x)
        runs, strides = self.leaf_runs(x, perm)
        n = self.count(x.shape)
        total = self.scratch(REG[dtype], "total")
        with b.if_else(runs) as (in_place, copied):
            with in_place:
                b.store(self.added(x, Pack([i64(0)] * x.width), n, Pack(strides), dtype,
                                   cast), total)
            with copied:
                temp = self.temporary(x, perm, None)
                flat = temp.view(temp.data, [n], [i64(1)])
                b.store(self.added(flat, i64(0), n, i64(1), dtype, cast), total)
                self.release(temp)
        return b.load(total, typ=REG[dtype])

    def lazy_order(self, x):
        """The axes of x's temporary from the innermost (registers): each op of the tree
        lays its result out in the order its operands' strides give (the leaves', and its
        children's temporaries')."""
        leaves = iter([[pack.items[k] for pack in x.strides] for k in range(x.width)])
        return self.node_layout(x.node, x.shape, leaves, {})[0]

    def node_layout(self, node, shape, leaves, known):
        """(axis order, strides of the temporary) of one op of a lazy tree; `known` keeps
        them by node and operand strides (a node used twice, as y in y * y, once)."""
        operands = []
        for part in node.parts:
            if isinstance(part, LazyNode):
                operands.append(self.node_layout(part, shape, leaves, known)[1])
            elif part is not None:
                operands.append(next(leaves))
        key = (id(node), tuple(id(s) for strides in operands for s in strides))
        if key in known:
            return known[key]
        known[key] = self._node_layout(shape, operands)
        return known[key]

    def _node_layout(self, shape, operands):
        perm = self.axis_order(shape, operands)
        b = self.b
        sizes = []
        for a, n in enumerate(shape):
            spans = ir.Constant(I1, 0)  # some operand is not broadcast along axis a
            for strides in operands:
                spans = b.or_(spans, b.icmp_signed("!=", strides[a], i64(0)))
            sizes.append(b.select(spans, n, i64(1)))
        return perm, self.layout_strides(sizes, perm, broadcast_zero=True)

    def layout_strides(self, sizes, perm, broadcast_zero=False):
        """Strides of an array of `sizes` contiguous in the axis order `perm` (the first
        fastest); axes of length 1 get 0 when broadcast_zero (they are broadcast)."""
        b = self.b
        strides = [i64(0)] * len(sizes)
        step = i64(1)
        for p in perm:
            size = _pick(b, sizes, p)
            value = step
            if broadcast_zero:
                value = b.select(b.icmp_signed("==", size, i64(1)), i64(0), step)
            strides = [b.select(b.icmp_signed("==", p, i64(a)), value, s)
                       for a, s in enumerate(strides)]
            step = b.mul(step, size)
        return strides

    def axis_order(self, shape, operands):
        """nditer's axis order (order_fn) for operands with these strides: C order, with no
        call, when no operand's strides could move an axis (c_ordered), else order_fn's."""
        b = self.b
        n = len(shape)
        perm_cell = self.scratch(ir.ArrayType(I64, n), "perm")

        def planned():
            shape_cell = self.scratch(ir.ArrayType(I64, n), "shape")
            strides_cell = self.scratch(ir.ArrayType(I64, max(1, n * len(operands))),
                                        "strides")
            for a, d in enumerate(shape):
                b.store(d, _at(b, shape_cell, i64(a)))
            for k, strides in enumerate(operands):
                for a, s in enumerate(strides):
                    b.store(s, _at(b, strides_cell, i64(k * n + a)))
            b.call(order_fn(self.module, n), [i64(len(operands)), shape_cell, strides_cell,
                                              perm_cell])

        if n < 2 or n * (n - 1) // 2 * len(operands) > _C_ORDER_CHECKS:
            planned()
        else:
            with b.if_else(c_ordered(b, shape, operands)) as (kept, sorted_):
                with kept:
                    for k in range(n):
                        b.store(i64(n - 1 - k), _at(b, perm_cell, i64(k)))
                with sorted_:
                    planned()
        return [b.load(_at(b, perm_cell, i64(a)), typ=I64) for a in range(n)]

    def leaf_runs(self, x, perm):
        """Whether every leaf of x is one run in the axis order `perm` (axes of length 1
        aside), and each leaf's stride along that run."""
        b = self.b
        ok = ir.Constant(I1, 1)
        inner = []
        sizes = [_pick(b, x.shape, p) for p in perm]
        for k in range(x.width):
            leaf = [pack.items[k] for pack in x.strides]
            first, run_stride, end = ir.Constant(I1, 1), i64(0), i64(0)
            for p, size in zip(perm, sizes):
                stride = _pick(b, leaf, p)
                unit = b.icmp_signed("==", size, i64(1))
                ok = b.and_(ok, b.or_(b.or_(unit, first), b.icmp_signed("==", stride, end)))
                run_stride = b.select(b.and_(first, b.not_(unit)), stride, run_stride)
                end = b.select(unit, end, b.mul(stride, size))
                first = b.and_(first, unit)
            inner.append(run_stride)
        return ok, inner

    def temporary(self, x, perm, loc):
        """x computed into a new array laid out in the axis order `perm` (numpy's
        temporary), written in its memory order."""
        b = self.b
        out = self.new_array(x.dtype, x.shape, loc)
        out = out.view(out.data, x.shape, self.layout_strides(x.shape, perm))
        outer = list(reversed(perm))
        shape = [_pick(b, x.shape, p) for p in outer]
        dst = [_pick(b, out.strides, p) for p in outer]
        src = [Pack([_pick(b, [s.items[k] for s in x.strides], p) for k in range(x.width)])
               for p in outer]
        self.loops(shape, [dst, src], lambda offs: self.write(
            out, offs[0], self.read(x, offs[1]), x.dtype))
        return out

    # -- one pairwise sum ------------------------------------------------------------------
    def pairwise(self, x, base, n, stride, dtype, short=False):
        """numpy's pairwise_sum of the n elements of x at base + i * stride, each converted
        to `dtype` (an ArrayV, or a LazyV whose base and stride are Packs). Calls an internal
        function per kind of operand; a stride only known at run time gets a separate call
        where it is 1 (that function's loads are consecutive); `short` adds up to PW_BLOCK
        elements here, with no call (rows of a few elements, many of them: block_here)."""
        b = self.b
        t = REG[dtype]
        strides = stride.items if isinstance(stride, Pack) else [stride]
        result = self.scratch(t, "pairwise")

        def call():
            if isinstance(x, LazyV) or isinstance(stride, ir.Constant):
                b.store(self.pairwise_call(x, base, n, strides, dtype), result)
                return
            with b.if_else(b.icmp_signed("==", stride, i64(1))) as (unit, strided):
                with unit:
                    b.store(self.pairwise_call(x, base, n, [i64(1)], dtype), result)
                with strided:
                    b.store(self.pairwise_call(x, base, n, strides, dtype), result)

        if not short:
            call()
            return b.load(result, typ=t)
        with b.if_else(b.icmp_signed("<", n, i64(8))) as (few, more):
            with few:  # in order from 0
                b.store(zero(t), result)
                self.loop(n, lambda i: b.store(b.fadd(b.load(result, typ=t), self.cast_to(
                    self.read(x, self.advance(base, i, stride)), x.dtype, dtype),
                    flags=self.flags), result))
            with more:
                with b.if_else(b.icmp_signed("<=", n, i64(PW_BLOCK))) as (block, halves):
                    with block:
                        b.store(self.block_here(x, base, n, stride, dtype), result)
                    with halves:
                        call()
        return b.load(result, typ=t)

    def block_here(self, x, base, n, stride, dtype):
        """pairwise_block of 8 <= n <= PW_BLOCK elements of x at base + i * stride, in the
        caller's code: a short row's sum costs less than the call (its arguments, the strides
        worked out again inside); an array's unit stride gets loads in place."""
        b = self.b

        def block(step):
            def element(i):
                return self.cast_to(self.read(x, self.advance(base, i, step)), x.dtype, dtype)

            return self.pairwise_block(x, element, [base], [step], n, dtype)

        if isinstance(x, LazyV) or isinstance(stride, ir.Constant) or x.dtype != dtype:
            return block(stride)
        slot = self.scratch(REG[dtype], "pairwise")
        with b.if_else(b.icmp_signed("==", stride, i64(1))) as (unit, strided):
            with unit:
                b.store(block(i64(1)), slot)
            with strided:  # (rare: a call, to keep the code small)
                b.store(self.pairwise_call(x, base, n, [stride], dtype), slot)
        return b.load(slot, typ=REG[dtype])

    def pairwise_call(self, x, base, n, strides, dtype):
        fn, params = self.pairwise_fn(x, strides, dtype)
        bases = base.items if isinstance(base, Pack) else [base]
        out = self.scratch(REG[dtype], "pairwise")
        self.b.call(fn, [self.ctx] + params + bases + [n, out])
        return self.b.load(out, typ=REG[dtype])

    def pairwise_fn(self, x, strides, dtype):
        """`i32 adc.pairwise.K(ctx, registers..., bases..., n, out*)`, shared by every sum of
        the same kind: x's leaves' data pointers and scalar registers and the strides are its
        parameters, except constants (a unit stride, a literal), which stay constants."""
        if isinstance(x, LazyV):
            comps = [leaf.data for leaf in x.node.leaves()]
            comps += [reg for node in x.node.walk() for _, reg in node.scalars]
            kind = x.signature()
        else:  # whoever owns the elements (it only reads them): one function for all
            comps, kind = [x.data], x.dtype
        pattern, params = [], []
        for c in comps + strides:
            if isinstance(c, ir.Constant):
                pattern.append(("c", str(c)))
            else:
                pattern.append(("p", str(c.type)))
                params.append(c)
        key = repr((dtype, kind, tuple(pattern))).encode()
        name = f"adc.pairwise.{hashlib.sha1(key).hexdigest()[:16]}"
        fn = self.module.globals.get(name)
        if fn is None:
            fn = self.make_pairwise(x, comps, strides, params, dtype, name)
        return fn, params

    def make_pairwise(self, x, comps, strides, params, dtype, name):
        width = len(strides)
        fnty = ir.FunctionType(ir.IntType(32), [PTR] + [p.type for p in params] +
                               [I64] * (width + 1) + [PTR])
        fn = ir.Function(self.module, fnty, name=name)
        fn.linkage = "internal"
        sub = self.sub_lowering(fn)
        args = iter(fn.args[1:-1])
        values = [c if isinstance(c, ir.Constant) else next(args) for c in comps + strides]
        bases = [next(args) for _ in range(width)]
        n = next(args)
        held, run_strides = values[:len(comps)], values[len(comps):]
        if isinstance(x, LazyV):
            leaves = [ArrayV(leaf.dtype, None, data, [], [], leaf.origin)
                      for leaf, data in zip(x.node.leaves(), held)]
            registers = iter(held[len(leaves):])
            node = x.node.rebuilt(iter(leaves), registers)
            run = LazyV(x.dtype, [n], [Pack(run_strides)], node)
        else:
            run = ArrayV(x.dtype, None, held[0], [n], run_strides)
        sub.pairwise_body(fn, run, bases, run_strides, n, dtype)
        if not hasattr(self, "_scopes") and hasattr(sub, "_scopes"):
            self._scopes = sub._scopes
        return fn

    def sub_lowering(self, fn):
        """A lowering that builds the body of `fn`, a function of the kernel's shape (see
        lower._Lowering.outline), with this one's settings."""
        sub = type(self)(self.module, fn, False, self.boundscheck)
        sub.flags = self.flags
        sub.errors = _NoErrors()  # shared by every caller: it cannot own an error code
        sub.origin_of = self.origin_of
        sub.target_data = getattr(self, "target_data", None)
        sub.lapack = getattr(self, "lapack", False)
        sub.blas = getattr(self, "blas", False)
        sub.outlined_fns = None
        if hasattr(self, "_scopes"):
            sub._scopes = self._scopes
        sub.start()
        return sub

    def pairwise_body(self, fn, x, bases, strides, n, dtype):
        """numpy's pairwise_sum, line by line (loops_utils.h.src)."""
        b = self.b
        t = REG[dtype]
        lazy = isinstance(x, LazyV)

        def element(i):
            offsets = [b.add(base, b.mul(i, s)) for base, s in zip(bases, strides)]
            return self.cast_to(self.read(x, Pack(offsets) if lazy else offsets[0]), x.dtype,
                                dtype)

        def add(a, c):
            return b.fadd(a, c, flags=self.flags)

        result = self.scratch(t, "result")
        small = b.icmp_signed("<", n, i64(8))
        block = b.icmp_signed("<=", n, i64(PW_BLOCK))
        with b.if_else(small) as (few, more):
            with few:
                b.store(zero(t), result)
                self.loop(n, lambda i: b.store(add(b.load(result, typ=t), element(i)), result))
            with more:
                with b.if_else(block) as (one_block, halves):
                    with one_block:
                        b.store(self.pairwise_block(x, element, bases, strides, n, dtype),
                                result)
                    with halves:
                        half = b.sdiv(n, i64(2))
                        half = b.sub(half, b.srem(half, i64(8)))
                        params = list(fn.args[1:-1 - len(bases) - 1])
                        parts = []
                        for start, size in ((i64(0), half), (half, b.sub(n, half))):
                            slot = self.scratch(t, "half")
                            moved = [b.add(base, b.mul(start, s))
                                     for base, s in zip(bases, strides)]
                            b.call(fn, [self.ctx] + params + moved + [size, slot])
                            parts.append(b.load(slot, typ=t))
                        b.store(add(*parts), result)
        b.store(b.load(result, typ=t), self.out)
        self.finish()

    def pairwise_block(self, x, element, bases, strides, n, dtype):
        """8 <= n <= PW_BLOCK elements: eight accumulators r[j] += a[i + j] (two vectors of
        four lanes, which add lane by lane as the eight scalars would), combined pairwise,
        then the rest one by one. The elements are read in place when they are consecutive
        floats of the sum's dtype, else computed into a block on the stack first (a loop
        LLVM vectorises)."""
        b = self.b
        t = REG[dtype]
        four = ir.VectorType(t, 4)
        size = 4 if dtype == "f32" else 8
        direct = isinstance(x, ArrayV) and x.dtype == dtype and \
            isinstance(strides[0], ir.Constant) and strides[0].constant == 1
        if direct:
            source = b.gep(x.data, [bases[0]], source_etype=t)
        else:
            source = self.scratch(ir.ArrayType(t, PW_BLOCK), "block")
            self.loop(n, lambda i: b.store(element(i), b.gep(source, [i], source_etype=t)))

        def lanes(i):
            vector = b.load(b.gep(source, [i], source_etype=t), typ=four, align=size)
            if direct:
                self.alias_info(vector, x)
            return vector

        low, high = self.scratch(four, "r0_3"), self.scratch(four, "r4_7")
        b.store(lanes(i64(0)), low)
        b.store(lanes(i64(4)), high)
        stop = b.sub(n, b.srem(n, i64(8)))

        def eight(k):
            i = b.mul(k, i64(8))
            for slot, at in ((low, i), (high, b.add(i, i64(4)))):
                b.store(b.fadd(b.load(slot, typ=four), lanes(at), flags=self.flags), slot)

        self.loop(b.sdiv(stop, i64(8)), eight, start=i64(1))
        r = [b.extract_element(b.load(slot, typ=four), i64(j)) for slot in (low, high)
             for j in range(4)]

        def add(a, c):
            return b.fadd(a, c, flags=self.flags)

        total = self.scratch(t, "block")
        b.store(add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]),
                                                                add(r[6], r[7]))), total)

        def rest(i):
            value = b.load(b.gep(source, [i], source_etype=t), typ=t)
            b.store(add(b.load(total, typ=t), value), total)

        self.loop(n, rest, start=stop)
        return b.load(total, typ=t)


class _Plan:
    """The registers of a plan written by sum_plan_fn (its cells stay in memory)."""

    def __init__(self, b, cell, ndim):
        self.b, self.cell, self.ndim = b, cell, ndim
        self.kr, seq, self.nb, self.P, self.L = [b.load(_at(b, cell, i64(k)), typ=I64)
                                                  for k in range(_PLAN_HEAD)]
        self.seq = b.icmp_signed("!=", seq, i64(0))

    def size(self, k):
        return self.b.load(_at(self.b, self.cell, self.b.add(k, i64(_PLAN_HEAD))), typ=I64)

    def stride(self, k):
        return self.b.load(_at(self.b, self.cell, self.b.add(k, i64(_PLAN_HEAD + self.ndim))),
                           typ=I64)


# -- numpy's iterator, computed at run time -------------------------------------------------

def order_fn(module, ndim):
    """adc.axis_order.N(nops, shape*, strides*, perm*): nditer's axis order for `nops`
    operands (strides[op * N + axis]), innermost first, into perm (npyiter_find_best_axis_
    ordering): the axes in reverse C order, each moved inward past the axes with a larger
    |stride| (for the first operand that has both strides nonzero, unless a later one
    disagrees: C order wins), past the axes where no operand decides, and stopping at the
    first that is not larger. An axis of length 1 has stride 0 there."""
    name = f"adc.axis_order.{ndim}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, PTR, PTR, PTR]), name=name)
    planning(fn)
    nops, shape_p, strides_p, perm_p = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    v = Locals(b, ("i0", "i1", "ipos", "go", "op", "ambig", "swap", "j"))
    shape, perm, strides = Cells(b, shape_p), Cells(b, perm_p), Cells(b, strides_p)
    for k in range(ndim):
        perm[i64(k)] = i64(ndim - 1 - k)

    def stride(op, axis):
        s = strides[b.add(b.mul(op, i64(ndim)), axis)]
        return b.select(b.icmp_signed("==", shape[axis], i64(1)), i64(0), s)

    def magnitude(s):
        return b.select(b.icmp_signed("<", s, i64(0)), b.neg(s), s)

    def insert():
        i0 = v["i0"]
        x = perm[i0]
        v["ipos"], v["i1"], v["go"] = i0, b.sub(i0, i64(1)), i64(1)

        def compare():
            y = perm[v["i1"]]
            v["ambig"], v["swap"], v["op"] = i64(1), i64(0), i64(0)

            def each_operand():
                s0, s1 = stride(v["op"], x), stride(v["op"], y)
                both = b.and_(b.icmp_signed("!=", s0, i64(0)), b.icmp_signed("!=", s1, i64(0)))
                with b.if_then(both):
                    keep = b.icmp_signed("<=", magnitude(s1), magnitude(s0))
                    first = b.icmp_signed("!=", v["ambig"], i64(0))
                    v["swap"] = b.select(keep, i64(0), b.select(first, i64(1), v["swap"]))
                    v["ambig"] = i64(0)
                v["op"] = b.add(v["op"], i64(1))

            while_loop(b, lambda: b.icmp_signed("<", v["op"], nops), each_operand)
            with b.if_then(b.icmp_signed("==", v["ambig"], i64(0))):
                with b.if_else(b.icmp_signed("!=", v["swap"], i64(0))) as (moves, stays):
                    with moves:
                        v["ipos"] = v["i1"]
                    with stays:
                        v["go"] = i64(0)
            v["i1"] = b.sub(v["i1"], i64(1))

        while_loop(b, lambda: b.and_(b.icmp_signed("!=", v["go"], i64(0)),
                                 b.icmp_signed(">=", v["i1"], i64(0))), compare)
        v["j"] = i0

        def shift():
            j = v["j"]
            perm[j] = perm[b.sub(j, i64(1))]
            v["j"] = b.sub(j, i64(1))

        while_loop(b, lambda: b.icmp_signed(">", v["j"], v["ipos"]), shift)
        perm[v["ipos"]] = x
        v["i0"] = b.add(i0, i64(1))

    v["i0"] = i64(1)
    while_loop(b, lambda: b.icmp_signed("<", v["i0"], i64(ndim)), insert)
    b.ret_void()
    return fn


def c_ordered(b, shape, operands):
    """Whether order_fn keeps C order because no operand asks for a move: for every
    operand and axes a < b where both strides are nonzero (an axis of length 1 counts as
    stride 0), |stride b| <= |stride a|. An operand that decides a comparison then keeps
    the order, and one that decides none leaves it, so the insertion sort moves nothing."""
    kept = ir.Constant(I1, 1)
    for strides in operands:
        live = [b.select(b.icmp_signed("==", d, i64(1)), i64(0), s)
                for d, s in zip(shape, strides)]
        size = [b.select(b.icmp_signed("<", s, i64(0)), b.neg(s), s) for s in live]
        for a in range(len(shape)):
            for c in range(a + 1, len(shape)):
                idle = b.or_(b.icmp_signed("==", live[a], i64(0)),
                             b.icmp_signed("==", live[c], i64(0)))
                kept = b.and_(kept, b.or_(idle, b.icmp_signed("<=", size[c], size[a])))
    return kept


def sum_plan_fn(module, ndim):
    """adc.sum_plan.N(shape*, strides*, reduced*, cast, plan*): how numpy's iterator cuts a
    reduction of an N-d array into calls of its add loop, for one output element (each has
    the same structure):

    the axes in nditer's order (order_fn), those of length 1 dropped, neighbours merged when
    both are reduced or both kept and the strides chain; then npyiter_find_buffering_setup's
    search for the block of inner dims a call spans, with its cost model: 1 + 1 per operand
    that needs a buffer (the input once it stops being one stride, from dim 1, or from the
    start for a cast; the output at the first kept dim after reduced ones), size capped at
    BUFSIZE when something is buffered, the block grown while cost * best size <= best cost *
    size. Writes kr (the reduced dims, innermost first, their sizes and strides from
    plan[5], plan[5 + N]), seq (the first dim is kept: each output adds its elements one by
    one), nb (the block: reduced dims 0..nb-1), P (its size) and L (the longest call in it:
    a block longer than BUFSIZE that is buffered is cut into calls of as many whole
    innermost cores as fit)."""
    name = f"adc.sum_plan.{ndim}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, I64, PTR]),
                     name=name)
    planning(fn)
    shape_p, strides_p, reduced_p, cast, plan_p = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    v = Locals(b, ("i", "k", "r", "d", "cost", "size", "best_dim", "best_cost", "best_size",
                    "best_core", "stop", "j"))
    cells = [opaque(b.alloca(ir.ArrayType(I64, max(ndim, 2)))) for _ in range(4)]
    perm, dn, ds, dk = (Cells(b, c) for c in cells)
    shape, stride, reduced, plan = (Cells(b, p) for p in (shape_p, strides_p, reduced_p,
                                                            plan_p))
    for k in range(ndim):
        dn[i64(k)], ds[i64(k)], dk[i64(k)] = i64(0), i64(0), i64(0)
    b.call(order_fn(module, ndim), [i64(1), shape_p, strides_p, cells[0]])
    _coalesce(b, v, ndim, perm, shape, stride, reduced, dn, ds, dk)
    k = v["k"]
    v["r"] = i64(0)

    def leading_reduced():
        return b.and_(b.icmp_signed("<", v["r"], k),
                      b.icmp_signed("!=", dk[b.select(b.icmp_signed("<", v["r"], k), v["r"],
                                                      i64(0))], i64(0)))

    while_loop(b, leading_reduced, lambda: v.__setitem__("r", b.add(v["r"], i64(1))))
    r = v["r"]
    kept_next = b.icmp_signed("<", r, k)
    _cost_search(b, v, cast, r, kept_next, dn, ds)
    reduce_mode = b.and_(kept_next, b.icmp_signed("==", v["best_dim"], r))
    blocked = b.select(reduce_mode, r, b.add(v["best_dim"], i64(1)))
    size = b.select(reduce_mode, v["best_core"], v["best_size"])
    buffered = b.and_(b.not_(reduce_mode), b.or_(b.icmp_signed("!=", cast, i64(0)),
                                                   b.icmp_signed(">=", v["best_dim"], i64(1))))
    core = v["best_core"]
    core = b.select(b.icmp_signed("<", core, i64(1)), i64(1), core)  # an empty array
    cut = b.mul(core, b.sdiv(i64(BUFSIZE), core))
    longest = b.select(b.and_(buffered, b.icmp_signed(">", size, i64(BUFSIZE))), cut, size)
    nothing = b.icmp_signed("==", k, i64(0))  # every axis of length 1: one element
    size = b.select(nothing, i64(1), size)
    longest = b.select(b.icmp_signed("<", longest, i64(1)), i64(1), longest)
    _write_reduced(b, v, ndim, k, dn, ds, dk, plan)
    seq = b.and_(b.not_(nothing), b.icmp_signed("==", r, i64(0)))
    plan[i64(1)] = b.zext(seq, I64)
    plan[i64(2)], plan[i64(3)], plan[i64(4)] = blocked, size, longest
    b.ret_void()
    return fn


def _coalesce(b, v, ndim, perm, shape, stride, reduced, dn, ds, dk):
    """npyiter_coalesce_axes for the input and the output: dims (dn sizes, ds strides, dk
    reduced) in perm's order, length-1 axes dropped; v["k"] their number."""
    v["i"], v["k"] = i64(0), i64(0)

    def one():
        a = perm[v["i"]]
        n = shape[a]
        with b.if_then(b.icmp_signed("!=", n, i64(1))):
            s, kind, k = stride[a], reduced[a], v["k"]
            some = b.icmp_signed(">", k, i64(0))
            prev = b.select(some, b.sub(k, i64(1)), i64(0))
            merge = b.and_(some, b.and_(b.icmp_signed("==", dk[prev], kind),
                                        b.icmp_signed("==", b.mul(ds[prev], dn[prev]), s)))
            with b.if_else(merge) as (merged, new):
                with merged:
                    dn[prev] = b.mul(dn[prev], n)
                with new:
                    dn[k], ds[k], dk[k] = n, s, kind
                    v["k"] = b.add(k, i64(1))
        v["i"] = b.add(v["i"], i64(1))

    while_loop(b, lambda: b.icmp_signed("<", v["i"], i64(ndim)), one)


def _cost_search(b, v, cast, r, kept_next, dn, ds):
    """npyiter_find_buffering_setup's loop over the dims 1..r (r: the first kept dim, if
    any) for the best outer dim."""
    cast_flag = b.icmp_signed("!=", cast, i64(0))
    v["cost"] = b.add(i64(1), cast)
    v["size"] = dn[i64(0)]
    v["best_dim"], v["best_cost"] = i64(0), v["cost"]
    v["best_size"], v["best_core"] = v["size"], i64(1)
    v["d"], v["stop"] = i64(1), i64(0)
    last = b.add(r, b.zext(kept_next, I64))

    def step():
        d, cost, size = v["d"], v["cost"], v["size"]
        full = b.and_(b.icmp_signed(">=", size, i64(BUFSIZE)), b.icmp_signed(">", cost, i64(1)))
        with b.if_else(full) as (stops, goes):
            with stops:
                v["stop"] = i64(1)
            with goes:
                # the kept dim: the output stops being one stride (and the input, at dim 1,
                # unless it chains or is cast anyway)
                chained = b.icmp_signed("==", b.mul(ds[i64(0)], dn[i64(0)]), ds[i64(1)])
                input_too = b.and_(b.icmp_signed("==", d, i64(1)),
                                   b.not_(b.or_(cast_flag, chained)))
                kept = b.add(cost, b.add(i64(1), b.zext(input_too, I64)))
                cost = b.select(b.icmp_signed("<", d, r), i64(2), kept)
                grown = b.mul(size, dn[d])
                capped = b.select(b.icmp_signed("<", grown, i64(BUFSIZE)), grown, i64(BUFSIZE))
                bufsize = b.select(b.icmp_signed(">", cost, i64(1)), capped, grown)
                better = b.icmp_signed("<=", b.mul(cost, v["best_size"]),
                                       b.mul(v["best_cost"], bufsize))
                v["best_cost"] = b.select(better, cost, v["best_cost"])
                v["best_core"] = b.select(better, size, v["best_core"])
                v["best_size"] = b.select(better, grown, v["best_size"])
                v["best_dim"] = b.select(better, d, v["best_dim"])
                v["cost"], v["size"], v["d"] = cost, grown, b.add(d, i64(1))

    while_loop(b, lambda: b.and_(b.icmp_signed("<", v["d"], last),
                             b.icmp_signed("==", v["stop"], i64(0))), step)


def _write_reduced(b, v, ndim, k, dn, ds, dk, plan):
    """The reduced dims in order into the plan (one dim of 1 element when none is longer
    than 1), their number at plan[0]."""
    v["i"], v["j"] = i64(0), i64(0)

    def one():
        i = v["i"]
        with b.if_then(b.icmp_signed("!=", dk[i], i64(0))):
            j = v["j"]
            plan[b.add(j, i64(_PLAN_HEAD))] = dn[i]
            plan[b.add(j, i64(_PLAN_HEAD + ndim))] = ds[i]
            v["j"] = b.add(j, i64(1))
        v["i"] = b.add(i, i64(1))

    while_loop(b, lambda: b.icmp_signed("<", v["i"], k), one)
    with b.if_then(b.icmp_signed("==", v["j"], i64(0))):
        plan[i64(_PLAN_HEAD)], plan[i64(_PLAN_HEAD + ndim)] = i64(1), i64(0)
        v["j"] = i64(1)
    plan[i64(0)] = v["j"]


# -- small helpers for code written in LLVM IR -----------------------------------------------

class _NoErrors(dict):
    """The error table of a function shared by functions with tables of their own."""

    def add(self, exception, message):
        raise AssertionError("a shared pairwise-sum function cannot raise (this is a bug in "
                             "adcompile)")

    code_of = add


def _out_of_line(fn):
    """An internal function whose loops are control rather than arithmetic: kept out of line
    and optimised for size (inlined, unswitched and unrolled into every reduction, these
    multiplied the compile time of a sum by ten)."""
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("optsize")


def planning(fn):
    """An internal function that plans an operation (an axis order, a reduction's blocks, a
    reshape's strides, a parallel sum's tree): run once per operation, never per element,
    so it is not optimised at all (`optnone`: no IR passes, LLVM's fast instruction
    selection), which saves its share of the compile time for a few nanoseconds a call."""
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")


def while_loop(b, cond, body):
    """while cond(): body(), with builder b."""
    head = b.append_basic_block("while.head")
    inside = b.append_basic_block("while.body")
    done = b.append_basic_block("while.end")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(cond(), inside, done)
    b.position_at_end(inside)
    body()
    b.branch(head)
    b.position_at_end(done)


class Locals:
    """Named i64 variables in stack slots: v["k"] reads one, v["k"] = x writes it."""

    def __init__(self, b, names):
        self._b = b
        self._slots = {name: opaque(b.alloca(I64, name=name)) for name in names}

    def __getitem__(self, name):
        return self._b.load(self._slots[name], typ=I64)

    def __setitem__(self, name, value):
        self._b.store(value, self._slots[name])


class Cells:
    """i64 values in memory from `base`, indexed by i64 values."""

    def __init__(self, b, base):
        self._b, self._base = b, base

    def __getitem__(self, index):
        return self._b.load(_at(self._b, self._base, index), typ=I64)

    def __setitem__(self, index, value):
        self._b.store(value, _at(self._b, self._base, index))


def _at(b, base, index):
    return b.gep(base, [index], source_etype=I64)


def _pick(b, values, index):
    """values[index] for a run-time index (a chain of selects)."""
    out = values[0]
    for k, value in enumerate(values[1:], 1):
        out = b.select(b.icmp_signed("==", index, i64(k)), value, out)
    return out


def _one(shape):
    return shape[0] if shape else i64(1)


def _first(strides, x):
    if strides:
        return strides[0]
    return Pack([i64(0)] * x.width) if isinstance(x, LazyV) else i64(0)

"""The generated CPython entry point of a compiled function (`METH_FASTCALL`).

`PyObject *entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs)` checks every
argument against the specialization it was compiled for (exact type; for arrays also ndim,
dtype, native byte order, alignment, C-contiguity when the layout is "C", writability when the
function stores into it), unpacks it into registers, releases the GIL, runs the kernel, takes
the GIL back, raises the kernel's error if it failed, and boxes the result: Python float/int/
bool for weak scalars, numpy scalars for strong ones, the array objects themselves (or a view
of them), tuples. Arrays the kernel allocated and does not return are released.

An argument that does not fit returns the `MISS` object instead of raising: the dispatcher
then picks or compiles the right specialization. No C compiler is involved; the object
offsets come from `capi`, which checked them against the running interpreter.
"""

import llvmlite.ir as ir

from adcompile.backends.llvm import capi
from adcompile.backends.llvm.memory import (LARGE_BYTES, LARGE_CACHE, LARGE_KEPT, SLAB,
                                            SLAB_CACHE, SLABS_KEPT, TAG, TR_BASE, TR_CLASS, TR_NELEMS, TR_NEXT, TR_PYOBJ,
                                            TR_TAG, large_block_malloced)
from adcompile.backends.llvm.values import (CONTEXT, CTX_ERR, CTX_LARGE, CTX_SLABS, CTX_SPARE,
                                            CTX_TEMPS,
                                            CTX_TSTATE, F32, F64, I1, I8, I32, I64, ITEMSIZE,
                                            MEM, PTR, alloca, external, flat_types, i64, opaque,
                                            shared)
from adcompile.ir import types as T

METH_FASTCALL = 0x80


def build_entry(module, kernel, name, written, release_gil=True, exact=None):
    """Add `name`, the entry point calling `kernel` (a lower.Kernel), to `module`."""
    fnty = ir.FunctionType(PTR, [PTR, PTR, I64])
    func = ir.Function(module, fnty, name=name)
    exact = len(kernel.param_types) if exact is None else exact
    _Entry(module, func, kernel, written, release_gil, exact).build()
    return func


class _Entry:
    def __init__(self, module, func, kernel, written, release_gil, exact):
        self.module = module
        self.func = func
        self.kernel = kernel
        self.written = written
        self.release_gil = release_gil
        self.exact = exact
        self.layouts = iter(kernel.layouts)
        self.strings = None  # how many `.str` globals the module has (counted once)

    # -- helpers ----------------------------------------------------------------------------
    def declare(self, name, ret, args, var_arg=False):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)
        return fn

    def symbol(self, name):
        return external(self.module, name)

    def field(self, obj, offset, typ):
        return self.b.load(self.b.gep(obj, [i64(offset)], source_etype=I8), typ=typ)

    def guard(self, ok):
        """Continue when `ok`, else return MISS."""
        cont = self.func.append_basic_block("fits")
        self.b.cbranch(ok, cont, self.miss_bb)
        self.b.position_at_end(cont)

    def is_(self, a, b):
        return self.b.icmp_unsigned("==", a, b)

    def incref(self, obj):
        self.b.call(self.declare("Py_IncRef", ir.VoidType(), [PTR]), [obj])

    def string(self, text):
        data = bytearray(text.encode("utf-8")) + b"\0"
        if self.strings is None:
            self.strings = sum(g.name.startswith(".str") for g in self.module.global_values)
        name = f".str{self.strings}"
        self.strings += 1
        g = opaque(ir.GlobalVariable(self.module, ir.ArrayType(I8, len(data)), name=name))
        g.global_constant = True
        g.linkage = "private"
        g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        return g

    # -- the function -----------------------------------------------------------------------
    def build(self):
        self_, args, nargs = self.func.args
        self.b = ir.IRBuilder(self.func.append_basic_block("entry"))
        self.miss_bb = self.func.append_basic_block("miss")
        self.error_bb = self.func.append_basic_block("raise")
        params = self.kernel.param_types
        self.guard(self.is_(nargs, i64(len(params))))
        flat_args = []
        for k, t in enumerate(params):
            obj = self.b.load(self.b.gep(args, [i64(k)], source_etype=PTR), typ=PTR)
            flat_args += self.unpack(obj, t, k in self.written, k < self.exact)
        ctx = alloca(self.b, CONTEXT, name="ctx")
        self.b.store(ir.Constant(CONTEXT, None), ctx)
        for cache, field in ((SLAB_CACHE, CTX_SPARE), (LARGE_CACHE, CTX_LARGE)):
            spare = self.b.atomic_rmw("xchg", self.symbol(cache), ir.Constant(PTR, None),
                                      "seq_cst")
            self.b.store(spare, self.b.gep(ctx, [i64(0), ir.Constant(I32, field)],
                                           source_etype=CONTEXT))
        self.b.atomic_rmw("xchg", self.symbol(LARGE_BYTES), i64(0), "seq_cst")
        result_struct = ir.LiteralStructType(flat_types(self.kernel.result_type))
        out = alloca(self.b, result_struct, name="out")

        def ctx_field(k):
            return self.b.gep(ctx, [i64(0), ir.Constant(I32, k)], source_etype=CONTEXT)

        if self.release_gil:
            state = self.b.call(self.declare("PyEval_SaveThread", PTR, []), [])
            self.b.store(state, ctx_field(CTX_TSTATE))
        status = self.b.call(self.kernel.function, [ctx] + flat_args + [out])
        if self.release_gil:
            self.b.call(self.declare("PyEval_RestoreThread", ir.VoidType(), [PTR]),
                        [self.b.load(ctx_field(CTX_TSTATE), typ=PTR)])
        failed = self.func.append_basic_block("failed")
        box_bb = self.func.append_basic_block("box")
        self.b.cbranch(self.b.icmp_signed("!=", status, ir.Constant(I32, 0)), failed, box_bb)
        # error: set the exception for the kernel's code, free what it allocated
        self.b.position_at_end(failed)
        self.raise_error(status, ctx_field)
        self.release_buffers(ctx_field)
        self.give_back_slabs(ctx)
        self.b.ret(ir.Constant(PTR, None))
        # success: box the result, then release the arrays not handed back
        self.b.position_at_end(box_bb)
        values = [self.b.load(self.b.gep(out, [i64(0), ir.Constant(I32, k)],
                                         source_etype=result_struct), typ=t)
                  for k, t in enumerate(result_struct.elements)]
        result = self.box(self.kernel.result_type, iter(values))
        self.release_buffers(ctx_field)
        self.give_back_slabs(ctx)
        self.b.ret(result)
        # an argument did not fit
        self.b.position_at_end(self.miss_bb)
        miss = self.symbol("adc_miss")
        self.incref(miss)
        self.b.ret(miss)
        self.b.position_at_end(self.error_bb)
        self.b.ret(ir.Constant(PTR, None))

    def release_buffers(self, ctx_field):
        """After boxing (or an error): free the buffers still on the context's list, and
        drop our reference to the numpy arrays made to own those handed to Python."""
        b = self.b
        pre = b.block
        head = self.func.append_basic_block("release.head")
        body = self.func.append_basic_block("release.body")
        done = self.func.append_basic_block("release.end")
        first = b.load(ctx_field(CTX_TEMPS), typ=PTR)
        b.branch(head)
        b.position_at_end(head)
        trailer = b.phi(PTR)
        trailer.add_incoming(first, pre)
        b.cbranch(self.is_(trailer, ir.Constant(PTR, None)), done, body)
        b.position_at_end(body)
        nxt = self.field(trailer, 8 * TR_NEXT, PTR)  # read before the buffer may go
        owner = self.field(trailer, 8 * TR_PYOBJ, PTR)
        with b.if_else(self.is_(owner, ir.Constant(PTR, None))) as (ours, handed):
            with ours:  # a pooled buffer goes with its slab
                alone = b.icmp_signed("<", self.field(trailer, 8 * TR_CLASS, I64), i64(0))
                with b.if_then(alone):
                    b.call(self.declare("free", ir.VoidType(), [PTR]),
                           [large_block_malloced(b, self.field(trailer, 8 * TR_BASE, PTR))])
            with handed:
                b.call(self.declare("Py_DecRef", ir.VoidType(), [PTR]), [owner])
        trailer.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)

    def give_back_slabs(self, ctx):
        """When the call ends, the slabs it used or took go back to the process's cache (at
        most SLABS_KEPT; the others are freed), and so do its free large blocks
        (at most LARGE_KEPT bytes): one exchange each, and whatever another call gave back
        meanwhile is freed (`adc.rt.slabs_done`, in the runtime library)."""
        self.b.call(slabs_done_fn(self.module), [ctx])

    @staticmethod
    def each_slab(b, first, visit, next_of=lambda b, slab: b.load(slab, typ=PTR)):
        """visit(b, slab) for each slab of the list from `first` (the link, next_of(b, slab),
        read first); also for other lists, with their next_of."""
        fn = b.function
        pre = b.block
        head = fn.append_basic_block("slab.head")
        body = fn.append_basic_block("slab.body")
        done = fn.append_basic_block("slab.end")
        b.branch(head)
        b.position_at_end(head)
        slab = b.phi(PTR)
        slab.add_incoming(first, pre)
        b.cbranch(b.icmp_unsigned("==", slab, ir.Constant(PTR, None)), done, body)
        b.position_at_end(body)
        nxt = next_of(b, slab)
        visit(b, slab)
        slab.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)

    def raise_error(self, status, ctx_field):
        """Raise the exception of kernel error `status` with its message (two integers from
        the context fill its %lld), looked up in constant tables indexed by the code: one
        call, however many places the kernel can fail (a branch per code made the entry
        point of a large kernel thousands of lines long)."""
        b = self.b
        done = self.func.append_basic_block("raised")
        errors = self.kernel.errors
        if not errors:
            b.branch(done)
            b.position_at_end(done)
            return
        size = max(errors) + 1
        null = ir.Constant(PTR, None)
        formats, exceptions, direct = [null] * size, [null] * size, [0] * size
        for code, (exception, message) in errors.items():
            formats[code] = self.string(message)
            if exception in capi.EXCEPTIONS:  # not a builtin: the class object itself
                exceptions[code], direct[code] = self.symbol(f"adc_exc_{exception}"), 1
            else:  # a builtin: the address of the variable PyExc_<name> holding it
                exceptions[code] = external(self.module, f"PyExc_{exception}", PTR)
        tables = []
        for name, typ, items in (("formats", PTR, formats), ("exceptions", PTR, exceptions),
                                 ("direct", I8, [ir.Constant(I8, d) for d in direct])):
            g = opaque(ir.GlobalVariable(self.module, ir.ArrayType(typ, size),
                                         name=f".errors.{name}"))
            g.global_constant = True
            g.linkage = "private"
            g.initializer = ir.Constant(ir.ArrayType(typ, size), items)
            tables.append((g, typ))
        known = b.icmp_unsigned("<", status, ir.Constant(I32, size))
        raise_bb = self.func.append_basic_block("raise")
        b.cbranch(known, raise_bb, done)
        b.position_at_end(raise_bb)
        index = b.zext(status, I64)
        fmt, exc, is_direct = (b.load(b.gep(g, [i64(0), index],
                                            source_etype=ir.ArrayType(typ, size)), typ=typ)
                               for g, typ in tables)
        found = self.func.append_basic_block("raise.known")
        b.cbranch(b.icmp_unsigned("!=", fmt, null), found, done)  # code 1: already set
        b.position_at_end(found)
        with b.if_else(b.icmp_unsigned("!=", is_direct, ir.Constant(I8, 0))) as (own, builtin):
            with own:
                own_bb = b.block
            with builtin:
                loaded = b.load(exc, typ=PTR)
                builtin_bb = b.block
        chosen = b.phi(PTR)
        chosen.add_incoming(exc, own_bb)
        chosen.add_incoming(loaded, builtin_bb)
        details = [b.load(ctx_field(CTX_ERR + k), typ=I64) for k in range(2)]
        fmt_fn = self.declare("PyErr_Format", PTR, [PTR, PTR], var_arg=True)
        b.call(fmt_fn, [chosen, fmt] + details)
        b.branch(done)
        b.position_at_end(done)

    # -- arguments --------------------------------------------------------------------------
    def unpack(self, obj, t, written, exact=True):
        """Check `obj` against type t and return its flattened register values."""
        b = self.b
        if isinstance(t, T.Scalar):
            if exact:
                return [self.unpack_exact(obj, t)]
            return [self.unpack_scalar(obj, t.dtype)]
        if isinstance(t, T.Tuple):
            self.guard(self.is_(self.field(obj, capi.OB_TYPE, PTR),
                                self.symbol("adc_tuple_type")))
            self.guard(b.icmp_signed("==", self.field(obj, capi.TUPLE_SIZE, I64),
                                     i64(len(t.items))))
            values = []
            for k, item in enumerate(t.items):
                values += self.unpack(self.field(obj, capi.TUPLE_ITEMS + 8 * k, PTR), item,
                                      written, exact)
            return values
        if isinstance(t, T.Array):
            return self.unpack_array(obj, t, written)
        raise NotImplementedError(f"compiled functions cannot take {t} arguments")

    def unpack_exact(self, obj, t):
        """A number of exactly the parameter's kind: Python bool/int/float for a weak
        scalar, the numpy scalar type for a strong one."""
        b = self.b
        if t.dtype == "bool":
            true, false = (("adc_true", "adc_false") if t.weak else
                           ("adc_np_true", "adc_np_false"))
            is_true = self.is_(obj, self.symbol(true))
            self.guard(b.or_(is_true, self.is_(obj, self.symbol(false))))
            return is_true
        kind = {("f64", True): "adc_float_type", ("i64", True): "adc_int_type",
                ("f64", False): "adc_f64_type", ("f32", False): "adc_f32_type",
                ("i64", False): "adc_i64_type"}[(t.dtype, t.weak)]
        self.guard(self.is_(self.field(obj, capi.OB_TYPE, PTR), self.symbol(kind)))
        if t.dtype == "i64" and t.weak:
            return self.python_int(obj)
        return self.field(obj, capi.FLOAT_VALUE if t.weak else capi.SCALAR_VALUE,
                          MEM[t.dtype])

    def unpack_scalar(self, obj, dtype):
        """A number of the parameter's kind: Python or numpy bool, int (i64), float (f64, or
        a np.float32 for f32). Derivative programs get Python floats for numpy-typed
        parameters, so both forms are taken."""
        b = self.b
        if dtype == "bool":
            is_true = b.or_(self.is_(obj, self.symbol("adc_true")),
                            self.is_(obj, self.symbol("adc_np_true")))
            is_false = b.or_(self.is_(obj, self.symbol("adc_false")),
                             self.is_(obj, self.symbol("adc_np_false")))
            self.guard(b.or_(is_true, is_false))
            return is_true
        kind = self.field(obj, capi.OB_TYPE, PTR)
        if dtype == "f64":  # np.float64 is a float subclass with the same layout
            self.guard(b.or_(self.is_(kind, self.symbol("adc_float_type")),
                             self.is_(kind, self.symbol("adc_f64_type"))))
            return self.field(obj, capi.FLOAT_VALUE, F64)
        if dtype == "f32":
            is_f32 = self.is_(kind, self.symbol("adc_f32_type"))
            self.guard(b.or_(is_f32, self.is_(kind, self.symbol("adc_float_type"))))
            as_f32 = self.field(obj, capi.SCALAR_VALUE, F32)
            from_float = b.fptrunc(self.field(obj, capi.FLOAT_VALUE, F64), F32)
            return b.select(is_f32, as_f32, from_float)
        # i64: a Python int (which may not fit) or a np.int64
        is_np = self.is_(kind, self.symbol("adc_i64_type"))
        self.guard(b.or_(is_np, self.is_(kind, self.symbol("adc_int_type"))))
        pre = b.block
        convert = self.func.append_basic_block("int_convert")
        done = self.func.append_basic_block("int_done")
        np_value = self.field(obj, capi.SCALAR_VALUE, I64)
        b.cbranch(is_np, done, convert)
        b.position_at_end(convert)
        value = self.python_int(obj)
        converted = b.block
        b.branch(done)
        b.position_at_end(done)
        result = b.phi(I64)
        result.add_incoming(np_value, pre)
        result.add_incoming(value, converted)
        return result

    def python_int(self, obj):
        """A Python int as int64; one that does not fit raises OverflowError (CPython's)."""
        b = self.b
        value = b.call(self.declare("PyLong_AsLongLong", I64, [PTR]), [obj])
        maybe_error = self.func.append_basic_block("int_check")
        ok = self.func.append_basic_block("int_ok")
        b.cbranch(b.icmp_signed("==", value, i64(-1)), maybe_error, ok)
        b.position_at_end(maybe_error)
        occurred = b.call(self.declare("PyErr_Occurred", PTR, []), [])
        b.cbranch(self.is_(occurred, ir.Constant(PTR, None)), ok, self.error_bb)
        b.position_at_end(ok)
        return value

    def unpack_array(self, obj, t, written):
        b = self.b
        layout = next(self.layouts)
        self.guard(self.is_(self.field(obj, capi.OB_TYPE, PTR), self.symbol("adc_ndarray_type")))
        self.guard(b.icmp_signed("==", self.field(obj, capi.ARRAY_NDIM, I32),
                                 ir.Constant(I32, t.ndim)))
        descr = self.field(obj, capi.ARRAY_DESCR, PTR)
        self.guard(b.icmp_signed("==", self.field(descr, capi.DESCR_TYPE_NUM, I32),
                                 ir.Constant(I32, capi.TYPE_NUM[t.dtype])))
        self.guard(b.icmp_unsigned("!=", self.field(descr, capi.DESCR_BYTEORDER, I8),
                                   ir.Constant(I8, ord(">"))))
        flags = self.field(obj, capi.ARRAY_FLAGS, I32)
        need = capi.ALIGNED | (capi.C_CONTIGUOUS if layout == "C" else 0) | \
            (capi.WRITEABLE if written else 0)
        self.guard(b.icmp_unsigned("==", b.and_(flags, ir.Constant(I32, need)),
                                   ir.Constant(I32, need)))
        data = self.field(obj, capi.ARRAY_DATA, PTR)
        dims = self.field(obj, capi.ARRAY_DIMS, PTR)
        shape = [b.load(b.gep(dims, [i64(k)], source_etype=I64), typ=I64)
                 for k in range(t.ndim)]
        if layout == "C":
            strides = [i64(0)] * t.ndim  # the kernel computes them from the shape
        else:
            raw = self.field(obj, capi.ARRAY_STRIDES, PTR)
            size = i64(capi.ITEMSIZE[t.dtype])
            strides = []
            for k in range(t.ndim):
                stride = b.load(b.gep(raw, [i64(k)], source_etype=I64), typ=I64)
                self.guard(b.icmp_signed("==", b.srem(stride, size), i64(0)))
                strides.append(b.sdiv(stride, size))
        return [obj, data] + shape + strides

    # -- results ----------------------------------------------------------------------------
    def box(self, t, values):
        b = self.b
        if isinstance(t, T.NoneType):
            none = self.symbol("adc_none")
            self.incref(none)
            return none
        if isinstance(t, T.Scalar):
            value = next(values)
            if t.weak:
                if t.dtype == "f64":
                    return b.call(self.declare("PyFloat_FromDouble", PTR, [F64]), [value])
                if t.dtype == "i64":
                    return b.call(self.declare("PyLong_FromLongLong", PTR, [I64]), [value])
                obj = b.select(value, self.symbol("adc_true"), self.symbol("adc_false"))
                self.incref(obj)
                return obj
            if t.dtype == "bool":
                obj = b.select(value, self.symbol("adc_np_true"), self.symbol("adc_np_false"))
                self.incref(obj)
                return obj
            slot = alloca(b, MEM[t.dtype])
            b.store(value, slot)
            scalar = self.declare("adc_PyArray_Scalar", PTR, [PTR, PTR, PTR])
            return b.call(scalar, [slot, self.symbol(f"adc_descr_{t.dtype}"),
                                   ir.Constant(PTR, None)])
        if isinstance(t, T.Tuple):
            tup = b.call(self.declare("PyTuple_New", PTR, [I64]), [i64(len(t.items))])
            for k, item in enumerate(t.items):
                obj = self.box(item, values)
                b.call(self.declare("PyTuple_SetItem", I32, [PTR, I64, PTR]), [tup, i64(k), obj])
            return tup
        if isinstance(t, T.Array):
            return self.box_array(t, values)
        raise NotImplementedError(f"compiled functions cannot return {t}")

    def box_array(self, t, values):
        """A numpy array for an array value: the argument or the returned buffer's array
        itself when the value is all of it, else a view of that array (numpy's base)."""
        b = self.b
        obj, data = next(values), next(values)
        shape = [next(values) for _ in range(t.ndim)]
        strides = [next(values) for _ in range(t.ndim)]
        tag = self.field(obj, 8 * TR_TAG, PTR)
        pre = b.block
        buffer_bb = self.func.append_basic_block("box.buffer")
        array_bb = self.func.append_basic_block("box.array")
        b.cbranch(self.is_(tag, self.symbol(TAG)), buffer_bb, array_bb)
        b.position_at_end(buffer_bb)
        owner = self.owner_of(obj, t, data, shape, strides)
        # the same place in the owner's memory (a slab buffer was copied when handed over)
        offset = b.sub(b.ptrtoint(data, I64),
                       b.ptrtoint(self.field(obj, 8 * TR_BASE, PTR), I64))
        moved = b.gep(self.field(owner, capi.ARRAY_DATA, PTR), [offset], source_etype=I8)
        owned = b.block
        b.branch(array_bb)
        b.position_at_end(array_bb)
        base = b.phi(PTR)
        base.add_incoming(obj, pre)
        base.add_incoming(owner, owned)
        where = b.phi(PTR)
        where.add_incoming(data, pre)
        where.add_incoming(moved, owned)
        return self.array_of(base, t, where, shape, strides)

    def owner_of(self, trailer, t, data, shape, strides):
        """The numpy array that owns a returned buffer, made on first use: the returned
        value itself when it is the whole buffer in C order, else a 1-d array over all of
        it; when that array dies its memory is freed or goes back to the cache
        (give_memory). A buffer carved from a slab, which goes when the call ends, is first
        copied into a malloc block."""
        b = self.b
        slot = b.gep(trailer, [i64(TR_PYOBJ)], source_etype=I64)
        made = b.load(slot, typ=PTR)
        pre = b.block
        make_bb = self.func.append_basic_block("own.make")
        done = self.func.append_basic_block("own.done")
        b.cbranch(self.is_(made, ir.Constant(PTR, None)), make_bb, done)
        b.position_at_end(make_bb)
        base = self.field(trailer, 8 * TR_BASE, PTR)
        start = self.own_copy(trailer, base)
        nelems = self.field(trailer, 8 * TR_NELEMS, I64)
        whole = b.and_(self.is_(data, base),
                       b.icmp_signed("==", self.product(shape), nelems))
        expected = i64(1)
        for n, s in reversed(list(zip(shape, strides))):
            whole = b.and_(whole, b.or_(b.icmp_signed("==", s, expected),
                                        b.icmp_signed("==", n, i64(1))))
            expected = b.mul(expected, n)
        with b.if_else(whole) as (as_is, flat):
            with as_is:
                array = self.new_array_object(t.dtype, start, shape, strides)
                as_is_end = b.block
            with flat:
                flat_array = self.new_array_object(t.dtype, start, [nelems], [i64(1)])
                flat_end = b.block
        owner = b.phi(PTR)
        owner.add_incoming(array, as_is_end)
        owner.add_incoming(flat_array, flat_end)
        self.give_memory(owner, trailer)
        b.store(owner, slot)
        make_end = b.block
        b.branch(done)
        b.position_at_end(done)
        result = b.phi(PTR)
        result.add_incoming(made, pre)
        result.add_incoming(owner, make_end)
        return result

    def give_memory(self, owner, trailer):
        """The owner array frees a pooled buffer's copy itself (it owns the data); a large
        block is held by its base, a capsule whose destructor (pool.py) puts the block back
        on the process's cache of large blocks, so the next call that needs a block of its
        size takes it without malloc and without faulting its pages in again."""
        b = self.b
        large = b.icmp_signed("<", self.field(trailer, 8 * TR_CLASS, I64), i64(0))
        with b.if_else(large) as (held, owned):
            with held:
                new = self.declare("PyCapsule_New", PTR, [PTR, PTR, PTR])
                capsule = b.call(new, [trailer, ir.Constant(PTR, None),
                                       self.symbol("adc_block_release")])
                failed = self.func.append_basic_block("own.nocapsule")
                made = self.func.append_basic_block("own.capsule")
                b.cbranch(self.is_(capsule, ir.Constant(PTR, None)), failed, made)
                b.position_at_end(failed)
                b.call(self.declare("Py_DecRef", ir.VoidType(), [PTR]), [owner])
                b.branch(self.error_bb)
                b.position_at_end(made)
                b.call(self.declare("adc_PyArray_SetBaseObject", I32, [PTR, PTR]),
                       [owner, capsule])
            with owned:
                flags = b.gep(owner, [i64(capi.ARRAY_FLAGS)], source_etype=I8)
                b.store(b.or_(b.load(flags, typ=I32), ir.Constant(I32, capi.OWNDATA)), flags)

    def own_copy(self, trailer, base):
        """Memory numpy may free for the buffer's elements: its own block, or for a pooled
        buffer a malloc'd copy of it (an unlikely failure: a MemoryError)."""
        b = self.b
        pre = b.block
        copy_bb = self.func.append_basic_block("own.copy")
        copied_bb = self.func.append_basic_block("own.copied")
        done = self.func.append_basic_block("own.memory")
        pooled = b.icmp_signed(">=", self.field(trailer, 8 * TR_CLASS, I64), i64(0))
        b.cbranch(pooled, copy_bb, done)
        b.position_at_end(copy_bb)
        size = b.sub(b.ptrtoint(trailer, I64), b.ptrtoint(base, I64))
        copy = b.call(self.declare("malloc", PTR, [I64]), [size])
        nomem = self.func.append_basic_block("own.nomem")
        b.cbranch(self.is_(copy, ir.Constant(PTR, None)), nomem, copied_bb)
        b.position_at_end(nomem)
        b.call(self.declare("PyErr_NoMemory", PTR, []), [])
        self.b.branch(self.error_bb)
        b.position_at_end(copied_bb)
        b.call(self.declare("memcpy", PTR, [PTR, PTR, I64]), [copy, base, size])
        b.branch(done)
        b.position_at_end(done)
        memory = b.phi(PTR)
        memory.add_incoming(base, pre)
        memory.add_incoming(copy, copied_bb)
        return memory

    def product(self, shape):
        n = i64(1)
        for d in shape:
            n = self.b.mul(n, d)
        return n

    def new_array_object(self, dtype, data, shape, strides, flags=capi.WRITEABLE):
        """PyArray_NewFromDescr over memory we give (strides in elements)."""
        b = self.b
        dims = alloca(b, ir.ArrayType(I64, max(len(shape), 1)))
        steps = alloca(b, ir.ArrayType(I64, max(len(shape), 1)))
        for k, (n, s) in enumerate(zip(shape, strides)):
            b.store(n, b.gep(dims, [i64(k)], source_etype=I64))
            b.store(b.mul(s, i64(ITEMSIZE[dtype])), b.gep(steps, [i64(k)], source_etype=I64))
        descr = self.symbol(f"adc_descr_{dtype}")
        self.incref(descr)  # stolen
        make = self.declare("adc_PyArray_NewFromDescr", PTR,
                            [PTR, PTR, I32, PTR, PTR, PTR, I32, PTR])
        flags = flags if isinstance(flags, ir.Value) else ir.Constant(I32, flags)
        return b.call(make, [self.symbol("adc_ndarray_type"), descr, ir.Constant(I32, len(shape)),
                             dims, steps, data, flags, ir.Constant(PTR, None)])

    def array_of(self, base, t, data, shape, strides):
        """`base` itself when the value is all of it (same data, shape and strides), else a
        new view of it."""
        b = self.b
        compare_bb = self.func.append_basic_block("box.compare")
        whole_bb = self.func.append_basic_block("box.whole")
        view_bb = self.func.append_basic_block("box.view")
        done = self.func.append_basic_block("boxed")
        maybe = b.and_(self.is_(data, self.field(base, capi.ARRAY_DATA, PTR)),
                       b.icmp_signed("==", self.field(base, capi.ARRAY_NDIM, I32),
                                     ir.Constant(I32, t.ndim)))
        b.cbranch(maybe, compare_bb, view_bb)
        b.position_at_end(compare_bb)
        dims = self.field(base, capi.ARRAY_DIMS, PTR)
        steps = self.field(base, capi.ARRAY_STRIDES, PTR)
        same = ir.Constant(I1, 1)
        for k, (n, s) in enumerate(zip(shape, strides)):
            same_n = b.icmp_signed("==", b.load(b.gep(dims, [i64(k)], source_etype=I64),
                                                typ=I64), n)
            same_s = b.icmp_signed("==", b.load(b.gep(steps, [i64(k)], source_etype=I64),
                                                typ=I64), b.mul(s, i64(ITEMSIZE[t.dtype])))
            same = b.and_(same, b.and_(same_n, b.or_(same_s, b.icmp_signed("==", n, i64(1)))))
        b.cbranch(same, whole_bb, view_bb)
        b.position_at_end(whole_bb)
        self.incref(base)
        b.branch(done)
        b.position_at_end(view_bb)
        writeable = b.and_(self.field(base, capi.ARRAY_FLAGS, I32),
                           ir.Constant(I32, capi.WRITEABLE))
        view = self.new_array_object(t.dtype, data, shape, strides, writeable)
        self.incref(base)  # stolen by SetBaseObject
        b.call(self.declare("adc_PyArray_SetBaseObject", I32, [PTR, PTR]), [view, base])
        view_end = b.block
        b.branch(done)
        b.position_at_end(done)
        result = b.phi(PTR)
        result.add_incoming(base, whole_bb)
        result.add_incoming(view, view_end)
        return result


SLABS_DONE_FN = "adc.rt.slabs_done"


def slabs_done_fn(module):
    """`void adc.rt.slabs_done(ctx)` (see _Entry.give_back_slabs), declared or defined by
    values.shared."""
    return shared(module, SLABS_DONE_FN, ir.FunctionType(ir.VoidType(), [PTR]),
                  lambda fn: _build_slabs_done(module, fn))


def _build_slabs_done(module, fn):
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    free = module.globals.get("free") or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [PTR]), name="free")
    kept = alloca(b, PTR)
    count = alloca(b, I64)
    b.store(ir.Constant(PTR, None), kept)
    b.store(i64(0), count)

    def keep_or_free(b, slab):
        room = b.icmp_signed("<", b.load(count, typ=I64), i64(SLABS_KEPT))
        with b.if_else(room) as (keep, drop):
            with keep:
                b.store(b.load(kept, typ=PTR), slab)
                b.store(slab, kept)
                b.store(b.add(b.load(count, typ=I64), i64(1)), count)
            with drop:
                b.call(free, [slab])

    for k in (CTX_SLABS, CTX_SPARE):
        field = b.gep(fn.args[0], [i64(0), ir.Constant(I32, k)], source_etype=CONTEXT)
        _Entry.each_slab(b, b.load(field, typ=PTR), keep_or_free)
    old = b.atomic_rmw("xchg", external(module, SLAB_CACHE), b.load(kept, typ=PTR), "seq_cst")
    _Entry.each_slab(b, old, lambda b, slab: b.call(free, [slab]))
    _give_back_large(module, b, fn.args[0], free)
    b.ret_void()


def _give_back_large(module, b, ctx, free):
    """The context's free large blocks to the process's cache, the first LARGE_KEPT bytes of
    them; the others, and what the cache held, freed."""
    field = b.gep(ctx, [i64(0), ir.Constant(I32, CTX_LARGE)], source_etype=CONTEXT)
    keep_newest_large(module, b, b.load(field, typ=PTR), free)


def keep_newest_large(module, b, first, free):
    """The list of free large blocks from `first` (most recently freed first) becomes the
    process's cache, cut after its first LARGE_KEPT bytes (the rest freed); whatever the cache
    held meanwhile is freed."""
    null = ir.Constant(PTR, None)
    kept, last, total = alloca(b, PTR), alloca(b, PTR), alloca(b, I64)
    b.store(null, kept)
    b.store(null, last)
    b.store(i64(0), total)

    def link(trailer):
        return b.gep(trailer, [i64(TR_NEXT)], source_etype=I64)

    def next_of(b, trailer):
        return b.load(link(trailer), typ=PTR)

    def release(b, trailer):
        base = b.load(b.gep(trailer, [i64(TR_BASE)], source_etype=I64), typ=PTR)
        b.call(free, [large_block_malloced(b, base)])

    def keep_or_free(b, trailer):  # kept in the list's order: the newest stay at its head
        size = b.neg(b.load(b.gep(trailer, [i64(TR_CLASS)], source_etype=I64), typ=I64))
        more = b.add(b.load(total, typ=I64), size)
        with b.if_else(b.icmp_signed("<=", more, i64(LARGE_KEPT))) as (keep, drop):
            with keep:
                b.store(null, link(trailer))
                tail = b.load(last, typ=PTR)
                with b.if_else(b.icmp_unsigned("==", tail, null)) as (empty, after):
                    with empty:
                        b.store(trailer, kept)
                    with after:
                        b.store(trailer, link(tail))
                b.store(trailer, last)
                b.store(more, total)
            with drop:
                release(b, trailer)

    _Entry.each_slab(b, first, keep_or_free, next_of)
    old = b.atomic_rmw("xchg", external(module, LARGE_CACHE), b.load(kept, typ=PTR), "seq_cst")
    b.atomic_rmw("xchg", external(module, LARGE_BYTES), b.load(total, typ=I64), "seq_cst")
    _Entry.each_slab(b, old, release, next_of)

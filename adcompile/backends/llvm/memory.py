"""Arrays the kernel allocates: buffers, reference counts, and when they are released.

A buffer is one `malloc` block: the elements first, then a 64-byte *trailer* (below). The
owner of an array value made by the kernel is its trailer. Returned to Python, a large buffer's
data pointer is handed to numpy with a capsule as the array's base, whose destructor puts the
block back on the process's cache of large blocks (entry.py, pool.py); a pooled buffer's
elements are copied into memory numpy owns and frees.

Reference counting, decided while compiling:
- every IR value holding arrays (an array, a tuple of them) holds one reference on the owner
  of each array, from its definition to its last use in the block that defines it (a use
  inside a nested region counts as a use by the op that owns the region). A new array starts
  with the reference of its value; a view (`a[i]`, `slice`, `transpose`...) takes one more;
- after the op that uses a value last, the value's references are released (a buffer whose
  count drops to zero is freed at once, also inside loops);
- values that cross a merge take their own reference: the operands of `yield`, `condition`
  and `return` are retained before the region's dying values are released, and a loop's
  initial values are retained on entry, so a loop-carried array or an if-result owns what it
  holds whatever the branch or iteration;
- a tape holds a reference to each array pushed on it, which its pop hands on.

Arguments (and their views) are never counted: their owners are numpy arrays that outlive the
call. Where an owner is not known while compiling (a value merged by a branch or a loop from
both kinds), the code tests the type pointer at byte 8, which a numpy array and a trailer
both have. Every live buffer is also on a doubly linked list in the call's context: an error
exit (an IndexError halfway through a loop) leaves through the cleanup block without
releasing anything, and the entry point then frees every buffer still on the list, so error
exits do not leak; after a normal return the list holds only the buffers handed to Python.

Temporaries are allocated once per call, not once per loop iteration. A buffer of up to
POOL_LIMIT bytes (a quarter slab, 16 KiB) takes a block of its size class (128 bytes, then four classes per power of
two: 160, 192, 224, 256, 320...); releasing it puts the block on the context's free list of
that class, where the next buffer of that class is taken from. New blocks are carved from
*slabs* (SLAB bytes, one malloc each, or a spare slab from the process's cache); when the call
ends the entry point gives its slabs back to that cache (at most SLABS_KEPT, the rest freed).
So a loop whose body makes the same temporaries each time allocates in its first iteration
only, a tape of small arrays costs one malloc per slab rather than one per array (none in
steady state), and the pool never holds more than the most blocks of a class alive at once. A
returned array whose buffer lies in a slab is copied into memory of its own when it is handed
to numpy (entry.py). A larger buffer is a block of its own, of its size class's size (the
same classes, continued): released, it goes on the context's list of free large blocks, where
the next large buffer of its class is taken from, and when the call ends these blocks go to a
process-wide cache as the slabs do (at most LARGE_KEPT bytes, those released last; the rest
freed: a process whose workloads grow keeps the blocks its current size needs). So a call that
makes the same large temporaries as the last one takes them back without malloc, and the kernel
does not fault their pages in again (glibc gives freed memory back to the system and takes it
anew: page faults were a fifth of GradBench gmm's derivative time); a large result's block
joins that cache when numpy's array dies (a third of GradBench ba's derivative time was the
page faults of its fresh results). Buffers between a quarter
slab and 128 KiB used to be pooled too, each on a slab of its own that the call freed: a tape of
80 KB arrays (GradBench ode at n = 10000) then faulted its pages in again on every call, 46% of
the gradient's CPU time. A tape's buffer past TAPE_SMALL bytes is such a large block too,
given back when the tape outgrows it or the call ends (tape_grow_fn).
"""

import os

import llvmlite.ir as ir

from adcompile.ir import types as T
from adcompile.ir.nodes import walk, walk_op
from adcompile.backends.llvm.values import (CONTEXT, CTX_CURSOR, CTX_LARGE, CTX_LIMIT, CTX_POOL,
                                            CTX_SLABS, CTX_SPARE, CTX_TEMPS, I1, I8, I32, I64,
                                            ITEMSIZE, POOL_LIMIT, PTR, ArrayV, TupleV, alloca,
                                            arrays_in, external, has_arrays, i64, shared)

# the trailer, in 8-byte slots
TR_COUNT, TR_TAG, TR_PREV, TR_NEXT, TR_BASE, TR_PYOBJ, TR_NELEMS, TR_CLASS = range(8)
TRAILER = 64
BUFFER_FN = "adc.rt.buffer"  # the runtime library's helpers (values.shared)
UNBUFFER_FN = "adc.rt.unbuffer"
TAG = "adc_buffer_tag"  # what slot TR_TAG holds: bound to a private object's address
# a slab: a header (the next slab, the size of its blocks' part), then SLAB bytes of blocks; a
# call's slabs (at most SLABS_KEPT) go back to the process's cache
SLAB, SLAB_HEADER, SLABS_KEPT = 1 << 16, 64, 256
SLAB_CACHE = "adc_slab_cache"
# the free large blocks (trailers linked through TR_NEXT; TR_CLASS holds minus the block's size)
# (1 GiB, or a sixteenth of the machine's memory where that is less, at least 256 MiB:
# GradBench ba13-14's Jacobian values, one 270-311 MB result computed again each call, were
# freed at 256 MiB and faulted in anew, 40% of the derivative's time at ba14)


def _kept_bytes():
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 1 << 28
    return max(1 << 28, min(1 << 30, ram // 16))


LARGE_CACHE, LARGE_KEPT = "adc_large_cache", _kept_bytes()
LARGE_BYTES = "adc_large_bytes"  # about how many bytes the cache holds (an i64)
# a tape's buffer past this many bytes is a large block (tape_grow_fn)
TAPE_SMALL = 1 << 16
# a capacity past this many bytes is no hint (tape_done_fn): a call on a huge input does not
# make every later call of the function take a huge block
HINT_LIMIT = LARGE_KEPT // 2

_VIEWS = ("load", "slice", "transpose", "broadcast_to", "diagonal", "strided")
_UNKNOWN = object()
# a large block starts 64 * c bytes into what malloc gave (c = 1..COLOURS - 1, in turn; the
# pointer malloc gave sits in the 8 bytes before the block): malloc hands out large blocks at
# one offset into a page, so the arrays of a loop would all fall in the same sets of the
# core's L1 cache, 8 ways for the 10-20 streams of a tiled run (GradBench ode's gradient:
# 6% of its time)
COLOURS = 64
COLOUR_COUNTER = "adc.colour"


def colour_counter(module):
    """The module's count of large blocks made (which colour the next one takes)."""
    counter = module.globals.get(COLOUR_COUNTER)
    if counter is None:
        counter = ir.GlobalVariable(module, I64, COLOUR_COUNTER)
        counter.linkage = "internal"
        counter.initializer = i64(0)
    return counter


def large_block_malloced(b, base):
    """The pointer malloc gave for the large block at `base` (what free takes)."""
    return b.load(b.gep(base, [i64(-1)], source_etype=PTR), typ=PTR)


# -- what an array's owner is, when that is known while compiling ---------------------------

def origins(fn):
    """{IR value of array type: "arg" | "alloc" | None}: whether the value's owner is always
    an argument, always a buffer the kernel allocated, or may be either. A fixed point over
    the loops (values only move from unknown to known to mixed)."""
    found = {}
    for p in fn.params:
        if isinstance(p.type, T.Array):
            found[p] = "arg"
    changed = [True]

    def join(value, origin):
        if not isinstance(value.type, T.Array) or origin is _UNKNOWN:
            return
        old = found.get(value, _UNKNOWN)
        new = origin if old is _UNKNOWN or old == origin else None
        if new != old or value not in found:
            found[value] = new
            changed[0] = True

    def of(value):
        return found.get(value, _UNKNOWN)

    while changed[0]:
        changed[0] = False
        for op in walk(fn.body):
            _visit(op, join, of)
    return found


def _visit(op, join, of):
    if not op.results and op.prim not in ("for", "while"):
        return
    prim = op.prim
    if prim in _VIEWS and isinstance(op.operands[0].type, T.Array):
        join(op.results[0], of(op.operands[0]))
    elif prim == "reshape" or (prim == "sum_to" and sum_to_may_alias(op)):
        # a view when the memory allows one, else a copy; sum_to: g itself when it has the shape
        source = of(op.operands[0])
        join(op.results[0], source if source in ("alloc", _UNKNOWN) else None)
    elif prim == "tuple_get":
        owner = op.operands[0].owner
        if owner is not None and owner.prim == "tuple":
            join(op.results[0], of(owner.operands[op.attrs["index"]]))
        else:
            join(op.results[0], None)
    elif prim == "tape_pop":
        join(op.results[0], None)
    elif prim == "if":
        for region in op.regions:
            for r, y in zip(op.results, region.terminator.operands):
                join(r, of(y))
    elif prim == "for":
        body = op.regions[0]
        for p, r, init, y in zip(body.params[1:], op.results, op.operands[3:],
                                 body.terminator.operands):
            for v in (p, r):
                join(v, of(init))
                join(v, of(y))
    elif prim == "while":
        head, body = op.regions
        for p, init, y in zip(head.params, op.operands, body.terminator.operands):
            join(p, of(init))
            join(p, of(y))
        for p, r, passed in zip(body.params, op.results, head.terminator.operands[1:]):
            join(p, of(passed))
            join(r, of(passed))
    else:
        for r in op.results:
            join(r, "alloc")


def sum_to_may_alias(sum_to):
    """Whether a sum_to may return its operand (arrays.py: same rank and dtype)."""
    g, like = sum_to.operands[0].type, sum_to.operands[1].type
    return isinstance(g, T.Array) and isinstance(like, T.Array) and g.ndim == like.ndim and \
        g.dtype == sum_to.results[0].type.dtype


# -- when values die --------------------------------------------------------------------------

def deaths(block, fusion=None):
    """{op index: values holding arrays, defined in `block` (or its parameters), whose last
    use is that op}; index -1 for parameters never used. With a fusion plan (fusion.py), a
    lazy value's leaves are used where it is."""
    last = {}
    leaves = fusion.leaves if fusion is not None else {}
    for k, op in enumerate(block.ops):
        for nested in walk_op(op):
            for v in nested.operands:
                last[v] = k
                for leaf in leaves.get(v, ()):
                    last[leaf] = k
    found = {}
    defined = [(p, -1) for p in block.params]
    defined += [(r, k) for k, op in enumerate(block.ops) for r in op.results]
    for v, k in defined:
        if has_arrays(v.type):
            found.setdefault(last.get(v, k), []).append(v)
    return found


class MemoryLowering:
    """Buffers and reference counts, mixed into the kernel's lowering."""

    # -- buffers ---------------------------------------------------------------------------
    def new_array(self, dtype, shape, loc=None):
        """A new C-contiguous array of `shape` (i64 values), uninitialised; a MemoryError
        when malloc fails or the size does not fit in 64 bits."""
        b = self.b
        count = i64(1)
        too_big = ir.Constant(I1, 0)
        for n in shape:
            pair = b.smul_with_overflow(count, n)
            count = b.extract_value(pair, 0)
            too_big = b.or_(too_big, b.extract_value(pair, 1))
        pair = b.smul_with_overflow(count, i64(ITEMSIZE[dtype]))
        too_big = b.or_(too_big, b.extract_value(pair, 1))
        nbytes = b.select(too_big, i64(-1), b.extract_value(pair, 0))
        trailer = b.call(self.buffer_fn(), [self.ctx, nbytes, count])
        code = self.error("MemoryError", "cannot allocate an array this large", loc)
        self.check(b.icmp_unsigned("==", trailer, ir.Constant(PTR, None)), code)
        data = b.load(self.slot(trailer, TR_BASE), typ=PTR)
        return ArrayV(dtype, trailer, data, shape, self.c_strides(shape), "alloc")

    def slot(self, trailer, k, builder=None):
        return (builder or self.b).gep(trailer, [i64(k)], source_etype=I64)

    def buffer_fn(self):
        """adc.buffer(ctx, nbytes, nelems): a new buffer with a reference count of 1, on the
        context's list; returns its trailer, or null (no memory, or nbytes < 0). A buffer of
        up to POOL_LIMIT bytes comes from the call's pool when one of its size class is free
        there."""
        return shared(self.module, BUFFER_FN, ir.FunctionType(PTR, [PTR, I64, I64]),
                      self.build_buffer)

    def build_buffer(self, fn):
        ctx, nbytes, nelems = fn.args
        blocks = {name: fn.append_basic_block(name)
                  for name in ("entry", "fail", "sized", "pool", "reuse", "fresh", "big", "made")}
        b = ir.IRBuilder(blocks["entry"])
        b.cbranch(b.icmp_signed("<", nbytes, i64(0)), blocks["fail"], blocks["sized"])
        b.position_at_end(blocks["fail"])
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(blocks["sized"])
        rounded = b.and_(b.add(nbytes, i64(15)), i64(-16))
        total = b.add(rounded, i64(TRAILER))
        cls, size = self.size_class(b, total)
        b.cbranch(b.icmp_signed("<=", total, i64(POOL_LIMIT)), blocks["pool"], blocks["big"])
        # a pooled size: the free buffer on top of its class's list, else a new one
        b.position_at_end(blocks["pool"])
        head = self.pool_head(b, ctx, cls)
        top = b.load(head, typ=PTR)
        b.cbranch(b.icmp_unsigned("==", top, ir.Constant(PTR, None)), blocks["fresh"],
                  blocks["reuse"])
        b.position_at_end(blocks["reuse"])
        b.store(b.load(self.slot(top, TR_NEXT, b), typ=PTR), head)
        b.branch(blocks["made"])
        b.position_at_end(blocks["fresh"])
        pooled = b.call(self.carve_fn(), [ctx, size, cls])
        b.cbranch(b.icmp_unsigned("==", pooled, ir.Constant(PTR, None)), blocks["fail"],
                  blocks["made"])
        fresh_end = b.block
        # a large buffer: a block of its class's size, free in the context or malloc'd
        b.position_at_end(blocks["big"])
        large = self.large_buffer(b, ctx, size, rounded, blocks["fail"])
        b.branch(blocks["made"])
        big_end = b.block
        b.position_at_end(blocks["made"])
        trailer = b.phi(PTR)
        trailer.add_incoming(top, blocks["reuse"])
        trailer.add_incoming(pooled, fresh_end)
        trailer.add_incoming(large, big_end)
        head_field = b.gep(ctx, [i64(0), ir.Constant(I32, CTX_TEMPS)], source_etype=CONTEXT)
        first = b.load(head_field, typ=PTR)
        for k, value in ((TR_COUNT, i64(1)), (TR_TAG, external(self.module, TAG)),
                         (TR_PREV, ir.Constant(PTR, None)), (TR_NEXT, first),
                         (TR_PYOBJ, ir.Constant(PTR, None)), (TR_NELEMS, nelems)):
            b.store(value, self.slot(trailer, k, b))
        with b.if_then(b.icmp_unsigned("!=", first, ir.Constant(PTR, None))):
            b.store(trailer, self.slot(first, TR_PREV, b))
        b.store(trailer, head_field)
        b.ret(trailer)

    @staticmethod
    def size_class(b, total):
        """(class, block size) of a block of at least `total` bytes (64 or more): class 0 is
        128 bytes; above that, with 2**e < total <= 2**(e+1), the block is (5 + s) * 2**(e-2)
        bytes for the s (0..3) that fits, class 4 * (e - 7) + s + 1."""
        less = b.sub(total, i64(1))
        e = b.sub(i64(63), b.ctlz(less, ir.Constant(I1, 0)))
        shift = b.sub(e, i64(2))
        sub = b.and_(b.lshr(less, shift), i64(3))
        small = b.icmp_signed("<=", total, i64(128))
        cls = b.add(b.mul(b.sub(e, i64(7)), i64(4)), b.add(sub, i64(1)))
        size = b.shl(b.add(sub, i64(5)), shift)
        return b.select(small, i64(0), cls), b.select(small, i64(128), size)

    @staticmethod
    def pool_head(b, ctx, cls):
        """Where the context keeps the first free buffer of size class `cls`."""
        return b.gep(ctx, [i64(0), ir.Constant(I32, CTX_POOL), cls], source_etype=CONTEXT)

    def large_buffer(self, b, ctx, size, offset, fail):
        """A large block of `size` bytes (a class's size): a free one from the context's list,
        else malloc's; branches to `fail` when there is no memory. Its trailer, at `offset`,
        holds the block's base and -size. Returns the trailer."""
        null = ir.Constant(PTR, None)
        free = b.call(self.take_large_fn(), [ctx, size])
        start = b.block
        new, got = b.append_basic_block("large.malloc"), b.append_basic_block("large.ok")
        b.cbranch(b.icmp_unsigned("==", free, null), new, got)
        b.position_at_end(new)
        raw = b.call(self.libc("malloc", PTR, [I64]), [b.add(size, i64(COLOURS * 64))])
        coloured = b.append_basic_block("large.colour")
        b.cbranch(b.icmp_unsigned("==", raw, null), fail, coloured)
        b.position_at_end(coloured)
        count = b.atomic_rmw("add", colour_counter(self.module), i64(1), "monotonic")
        fresh = b.gep(raw, [b.mul(b.add(b.urem(count, i64(COLOURS - 1)), i64(1)), i64(64))],
                      source_etype=ir.IntType(8))
        b.store(raw, b.gep(fresh, [i64(-1)], source_etype=PTR))
        b.branch(got)
        b.position_at_end(got)
        base = b.phi(PTR)
        base.add_incoming(free, start)
        base.add_incoming(fresh, coloured)
        trailer = b.gep(base, [offset], source_etype=ir.IntType(8))
        b.store(base, self.slot(trailer, TR_BASE, b))
        b.store(b.neg(size), self.slot(trailer, TR_CLASS, b))
        return trailer

    def take_large_fn(self):
        """adc.take_large(ctx, size): the base of a free large block of `size` bytes, taken off
        the context's list, or null when it has none."""
        fn = self.module.globals.get("adc.take_large")
        if fn is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(PTR, [PTR, I64]), name="adc.take_large")
        fn.linkage = "internal"
        ctx, size = fn.args
        blocks = {name: fn.append_basic_block(name)
                  for name in ("entry", "head", "test", "next", "found", "none")}
        b = ir.IRBuilder(blocks["entry"])
        first = b.gep(ctx, [i64(0), ir.Constant(I32, CTX_LARGE)], source_etype=CONTEXT)
        b.branch(blocks["head"])
        b.position_at_end(blocks["head"])
        link = b.phi(PTR)  # where the pointer to the block looked at is kept
        link.add_incoming(first, blocks["entry"])
        trailer = b.load(link, typ=PTR)
        b.cbranch(b.icmp_unsigned("==", trailer, ir.Constant(PTR, None)), blocks["none"],
                  blocks["test"])
        b.position_at_end(blocks["test"])
        fits = b.icmp_signed("==", b.load(self.slot(trailer, TR_CLASS, b), typ=I64), b.neg(size))
        b.cbranch(fits, blocks["found"], blocks["next"])
        b.position_at_end(blocks["next"])
        link.add_incoming(self.slot(trailer, TR_NEXT, b), blocks["next"])
        b.branch(blocks["head"])
        b.position_at_end(blocks["found"])
        b.store(b.load(self.slot(trailer, TR_NEXT, b), typ=PTR), link)
        b.ret(b.load(self.slot(trailer, TR_BASE, b), typ=PTR))
        b.position_at_end(blocks["none"])
        b.ret(ir.Constant(PTR, None))
        return fn

    def carve_fn(self):
        """adc.carve(ctx, size, class): the trailer of a new pooled block of `size` (a class size,
        at most a quarter slab) bytes, cut from the current slab or a new one; null when malloc
        fails."""
        fn = self.module.globals.get("adc.carve")
        if fn is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(PTR, [PTR, I64, I64]), name="adc.carve")
        fn.linkage = "internal"
        ctx, size, cls = fn.args
        blocks = {name: fn.append_basic_block(name)
                  for name in ("entry", "cut", "check", "spare", "malloc", "slab", "fail")}
        b = ir.IRBuilder(blocks["entry"])

        def field(k):
            return b.gep(ctx, [i64(0), ir.Constant(I32, k)], source_etype=CONTEXT)

        cursor = b.load(field(CTX_CURSOR), typ=PTR)
        room = b.sub(b.ptrtoint(b.load(field(CTX_LIMIT), typ=PTR), I64), b.ptrtoint(cursor, I64))
        b.cbranch(b.icmp_signed("<=", size, room), blocks["cut"], blocks["check"])
        # from the current slab
        b.position_at_end(blocks["cut"])
        b.store(b.gep(cursor, [size], source_etype=I8), field(CTX_CURSOR))
        b.ret(self.pooled_block(b, cursor, size, cls))
        # a new slab: a spare one, or SLAB bytes from malloc
        b.position_at_end(blocks["check"])
        length = i64(SLAB)
        spare = b.load(field(CTX_SPARE), typ=PTR)
        b.cbranch(b.icmp_unsigned("!=", spare, ir.Constant(PTR, None)), blocks["spare"],
                  blocks["malloc"])
        b.position_at_end(blocks["spare"])
        b.store(b.load(spare, typ=PTR), field(CTX_SPARE))
        b.branch(blocks["slab"])
        b.position_at_end(blocks["malloc"])
        new = b.call(self.libc("malloc", PTR, [I64]), [b.add(length, i64(SLAB_HEADER))])
        b.cbranch(b.icmp_unsigned("==", new, ir.Constant(PTR, None)), blocks["fail"],
                  blocks["slab"])
        b.position_at_end(blocks["fail"])
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(blocks["slab"])
        slab = b.phi(PTR)
        slab.add_incoming(spare, blocks["spare"])
        slab.add_incoming(new, blocks["malloc"])
        b.store(length, b.gep(slab, [i64(1)], source_etype=I64))
        b.store(b.load(field(CTX_SLABS), typ=PTR), slab)
        b.store(slab, field(CTX_SLABS))
        block = b.gep(slab, [i64(SLAB_HEADER)], source_etype=I8)
        b.store(b.gep(block, [size], source_etype=I8), field(CTX_CURSOR))
        b.store(b.gep(block, [i64(SLAB)], source_etype=I8), field(CTX_LIMIT))
        b.ret(self.pooled_block(b, block, size, cls))
        return fn

    def pooled_block(self, b, block, size, cls):
        trailer = b.gep(block, [b.sub(size, i64(TRAILER))], source_etype=I8)
        b.store(block, self.slot(trailer, TR_BASE, b))
        b.store(cls, self.slot(trailer, TR_CLASS, b))
        return trailer

    def unbuffer_fn(self):
        """adc.unbuffer(ctx, trailer): take a buffer off the context's list; a pooled one goes
        on its class's free list for the next buffer of its size, a large one on the context's
        list of free large blocks."""
        # called where every buffer may die (hundreds of places in a gradient's kernel):
        # inlined, its copies were a sixth of an LSTM gradient's LLVM time; now it is never
        # inlined, being in the runtime library
        return shared(self.module, UNBUFFER_FN, ir.FunctionType(ir.VoidType(), [PTR, PTR]),
                      self.build_unbuffer)

    def build_unbuffer(self, fn):
        ctx, trailer = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        prev = b.load(self.slot(trailer, TR_PREV, b), typ=PTR)
        nxt = b.load(self.slot(trailer, TR_NEXT, b), typ=PTR)
        null = ir.Constant(PTR, None)
        head_field = b.gep(ctx, [i64(0), ir.Constant(I32, CTX_TEMPS)], source_etype=CONTEXT)
        with b.if_else(b.icmp_unsigned("==", prev, null)) as (first, middle):
            with first:
                b.store(nxt, head_field)
            with middle:
                b.store(nxt, self.slot(prev, TR_NEXT, b))
        with b.if_then(b.icmp_unsigned("!=", nxt, null)):
            b.store(prev, self.slot(nxt, TR_PREV, b))
        cls = b.load(self.slot(trailer, TR_CLASS, b), typ=I64)
        large = b.icmp_signed("<", cls, i64(0))
        large_head = b.gep(ctx, [i64(0), ir.Constant(I32, CTX_LARGE)], source_etype=CONTEXT)
        head = b.select(large, large_head, self.pool_head(b, ctx, b.select(large, i64(0), cls)))
        b.store(b.load(head, typ=PTR), self.slot(trailer, TR_NEXT, b))
        b.store(trailer, head)
        b.ret_void()

    # -- tapes -----------------------------------------------------------------------------
    def tape_grow_fn(self):
        """adc.tape_grow(ctx, buffer, top, capacity, block, needed, hint, itemsize) -> {buffer,
        capacity, block}: a buffer for `needed` items, at least twice the old capacity and, for
        a tape that has no large block yet, at least `hint` items, holding the old buffer's
        `top` items; a null buffer when there is no memory. Up to TAPE_SMALL bytes it is
        realloc's; past that a large block (a free one of its class from the context, else
        malloc's; `block` is its trailer) that goes back on the context's list when it is
        outgrown or the call ends (tape_done_fn), so a derivative called again takes its
        tapes' blocks from the process's cache instead of faulting fresh pages in (half of
        the CPU time of GradBench det's gradient at ell = 9), and, its hint being the
        capacity the tape ended with last time, takes the right one at once instead of
        copying its items from block to block as it doubles (another fifth). The tape's
        fields go by value, so its stack slot stays in registers at the pushes."""
        fn = self.module.globals.get("adc.tape_grow")
        if fn is not None:
            return fn
        result = ir.LiteralStructType([PTR, I64, PTR])
        fn = ir.Function(self.module, ir.FunctionType(result, [PTR, PTR, I64, I64, PTR, I64, I64,
                                                              I64]), name="adc.tape_grow")
        fn.linkage = "internal"
        ctx, old, top, cap, block, needed, hint, itemsize = fn.args
        blocks = {name: fn.append_basic_block(name) for name in ("entry", "small", "large", "fail")}
        b = ir.IRBuilder(blocks["entry"])
        new_cap = b.add(b.mul(cap, i64(2)), i64(16))
        hint = b.select(b.icmp_unsigned("==", block, ir.Constant(PTR, None)), hint, i64(0))
        for least in (needed, hint):
            new_cap = b.select(b.icmp_signed(">", least, new_cap), least, new_cap)
        nbytes = b.mul(new_cap, itemsize)
        b.cbranch(b.icmp_signed("<=", nbytes, i64(TAPE_SMALL)), blocks["small"], blocks["large"])
        b.position_at_end(blocks["small"])
        buf = b.call(self.libc("realloc", PTR, [PTR, I64]), [old, nbytes])
        b.ret(self.struct_of(b, result, buf, new_cap, block))
        b.position_at_end(blocks["large"])
        _, size = self.size_class(b, b.add(nbytes, i64(TRAILER)))
        trailer = self.large_buffer(b, ctx, size, b.sub(size, i64(TRAILER)), blocks["fail"])
        base = b.load(self.slot(trailer, TR_BASE, b), typ=PTR)
        b.call(self.libc("memcpy", PTR, [PTR, PTR, I64]), [base, old, b.mul(top, itemsize)])
        self.tape_buffer_done(b, ctx, old, block)
        capacity = b.udiv(b.sub(size, i64(TRAILER)), itemsize)
        b.ret(self.struct_of(b, result, base, capacity, trailer))
        b.position_at_end(blocks["fail"])
        b.ret(self.struct_of(b, result, ir.Constant(PTR, None), i64(0), block))
        return fn

    @staticmethod
    def struct_of(b, result, *values):
        """A value of the literal struct type `result` holding `values`."""
        value = ir.Constant(result, None)
        for k, x in enumerate(values):
            value = b.insert_value(value, x, k)
        return value

    def tape_done_fn(self):
        """adc.tape_done(ctx, buffer, block, capacity, itemsize, hint*): a tape's buffer given
        back (cleanup block); a large one's capacity is the tape's hint for the next call,
        unless it is over HINT_LIMIT bytes (a relaxed atomic: calls on other threads may read
        either hint)."""
        fn = self.module.globals.get("adc.tape_done")
        if fn is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, I64, I64,
                                                                      PTR]), name="adc.tape_done")
        fn.linkage = "internal"
        ctx, buf, block, cap, itemsize, hint = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        with b.if_then(b.icmp_unsigned("!=", block, ir.Constant(PTR, None))):
            huge = b.icmp_signed(">", b.mul(cap, itemsize), i64(HINT_LIMIT))
            # an exchange: llvmlite's store_atomic wants typed pointers
            b.atomic_rmw("xchg", hint, b.select(huge, i64(0), cap), "monotonic")
        self.tape_buffer_done(b, ctx, buf, block)
        b.ret_void()
        return fn

    def tape_hint(self):
        """A new tape's hint (tape_grow_fn): a global of the module, 0 at first."""
        hint = ir.GlobalVariable(self.module, I64, self.module.get_unique_name("adc.tape_hint"))
        hint.linkage = "internal"
        hint.initializer = i64(0)
        return hint

    def tape_buffer_done(self, b, ctx, buf, block):
        """A tape's buffer freed, or, a large block (`block` its trailer, not null), put on the
        context's list of free large blocks."""
        with b.if_else(b.icmp_unsigned("==", block, ir.Constant(PTR, None))) as (small, large):
            with small:
                b.call(self.libc("free", ir.VoidType(), [PTR]), [buf])
            with large:
                head = b.gep(ctx, [i64(0), ir.Constant(I32, CTX_LARGE)], source_etype=CONTEXT)
                b.store(b.load(head, typ=PTR), self.slot(block, TR_NEXT, b))
                b.store(block, head)

    # -- reference counts ------------------------------------------------------------------
    def is_buffer(self, array):
        """i1: the array's owner is a buffer (not an argument)."""
        tag = self.b.load(self.slot(array.obj, TR_TAG), typ=PTR)
        return self.b.icmp_unsigned("==", tag, external(self.module, TAG))

    def counted(self, array, body):
        """Run body() where the array's owner is a buffer."""
        if array.origin == "arg":
            return
        if array.origin == "alloc":
            body()
            return
        with self.b.if_then(self.is_buffer(array)):
            body()

    def retain(self, value):
        """One more reference on the owner of every array in a flattened value."""
        for array in arrays_in(value):
            def inc(array=array):
                field = self.slot(array.obj, TR_COUNT)
                self.b.store(self.b.add(self.b.load(field, typ=I64), i64(1)), field)

            self.counted(array, inc)

    def release(self, value):
        """One reference less on the owner of every array in a flattened value; a buffer
        nobody holds is freed."""
        for array in arrays_in(value):
            def dec(array=array):
                field = self.slot(array.obj, TR_COUNT)
                left = self.b.sub(self.b.load(field, typ=I64), i64(1))
                self.b.store(left, field)
                with self.b.if_then(self.b.icmp_signed("==", left, i64(0)), likely=False):
                    self.b.call(self.unbuffer_fn(), [self.ctx, array.obj])

            self.counted(array, dec)

    def release_dead(self, values):
        for v in values:
            if v in self.values:
                self.release(self.values[v])

    def deaths_of(self, block):
        found = self._deaths.get(id(block))
        if found is None:
            found = self._deaths[id(block)] = deaths(block, self.fusion)
        return found

    def set_origin(self, value, irvalue):
        """The owner kind the static analysis found for a merged value (a phi)."""
        if isinstance(value, ArrayV):
            value.origin = self.origin_of.get(irvalue)
        elif isinstance(value, TupleV):
            for a in arrays_in(value):
                a.origin = None
        return value

    def scratch(self, typ, name=""):
        """A stack slot in the entry block (promoted to a register by LLVM)."""
        return alloca(self.allocas, typ, name)

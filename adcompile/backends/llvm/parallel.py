"""Parallel loops (LLVM backend): large array loops run in pieces on the pool's threads.

Which loops. Only loops whose result cannot depend on how they are cut:
- loop nests that write each element of their destination once and read nothing another
  iteration writes: elementwise ops into a new array, `x[...] = v`, `x[...] += v` (a value
  that may overlap x is read through a copy, as numpy does; fused lazy values never read what
  the store writes: fusion.py), the stores of a fused group, fills, copies, `sum_to` with its
  first axis kept. The outermost axis is cut; where the destination is not a new array, the
  code checks at run time that different indices of that axis reach different elements
  (|stride 0| is larger than the span of the other axes), else it runs in one piece;
- pairwise sums (pairwise.py): numpy's pairwise_sum splits n > 128 elements into halves at a
  multiple of 8, so the top D levels of its tree are 2**D sums of fixed pieces that can run
  anywhere; their results are then added back up the same tree. D depends only on n and the
  pool's unit (every split node stays above 128 elements), and the bits are those of the one
  call it replaces: a parallel sum equals the serial one whatever the thread count.
- reductions over kept axes, one output element per index (max, min, arg*, prod, integer
  sums; float axis sums when numpy's calls need no shared buffer): each output is reduced
  alone, in its own order, whichever thread does it;
- zero fills (memset in blocks, one piece function per module).
With fastmath=False results are therefore bit-identical to one thread; errors raised inside
a piece come out as the first error in iteration order (the pool keeps the failing piece that
comes first; pieces after it are skipped). A loop that may raise and writes into memory the
caller sees (an argument) runs in one piece, so what it leaves written on error is what a
serial run leaves.

How. The body of a qualifying loop is emitted into its own function
`i32 adc.chunk.N(env*, lo, hi)` (the loop over [lo, hi) of the outer axis) by the same
lowering code, with the builder, stack slots and exit blocks switched to that function. The
values it uses from the enclosing function (data pointers, strides, shapes, scalars) are then
found by walking its instructions and replaced by loads from `env`, a struct the caller fills
(closure conversion after the fact: the lowering rules stay as they are). The caller calls
`adc_parallel_for(chunk, env, n, work, cap)` (pool.py), which runs small loops (`work`
elements below the pool's threshold) in the calling thread. Nothing of this is emitted when
the function is compiled with `parallel=False`; only loops of the kinds above get a chunk
function, so other code compiles as before (pairwise sums share one tree function per kind
of sum, `adc.pairwise_tree.K`, as they share `adc.pairwise.K`).
"""

import llvmlite.ir as ir

from adcompile.backends.llvm import fpenv
from adcompile.backends.llvm.pairwise import planning
from adcompile.backends.llvm.pool import CHUNK_FN, ZERO_BLOCK, ZERO_ENV, zero_chunk
from adcompile.backends.llvm.values import I1, I8, I32, I64, ITEMSIZE, OK, PTR, REG, TAPE, \
    Builder, Pack, alloca, i64

MAX_DEPTH = 6  # a parallel pairwise sum has at most 2**6 pieces
# the elements of work a libm call per element counts for: the pool's threshold is in
# elements of memory-bound arithmetic (~1 ns each), and glibc's tanh takes ~20 ns, so the MLP's
# tanh of 64 x 256 elements (16384, below the threshold) ran on one thread; elementwise pieces
# compute each element as one thread does, so the bits are the same
LIBM_WORK = 8
LIBM = frozenset(["sin", "cos", "tan", "exp", "log", "log1p", "expm1", "tanh", "sinh", "cosh",
                  "asin", "acos", "atan", "log2", "log10", "erf", "erfc", "atan2", "hypot",
                  "fmod", "pow", "exp2"])
_SWAPPED = ("func", "b", "allocas", "status", "cleanup_bb", "exits", "in_chunk", "loop_bodies")
_PARALLEL_FOR = ("adc_parallel_for", I32, [PTR, PTR, I64, I64, I64])
_UNIT = ("adc_parallel_unit", I64, [])


def enable(module, cap):
    """Let the kernel of `module` run loops in parallel: cap None (no), 0 (the pool's
    thread count) or N (at most N threads)."""
    module.adc_parallel = cap


class ParallelLowering:
    """Mixed into the kernel's lowering (lower._Lowering), before the array rules."""

    in_chunk = False

    @property
    def parallel_cap(self):
        """None when this code must stay serial (a function compiled with parallel=False,
        or the body of a piece: pieces never split again)."""
        return None if self.in_chunk else getattr(self.module, "adc_parallel", None)

    # -- the general mechanism ---------------------------------------------------------------
    def parallel_range(self, n, work, body, visible=False):
        """body(lo, hi) over [0, n) in pieces, on the pool; `work` (elements) decides whether
        to split. `visible`: the body writes memory the caller sees, so if it may raise it
        runs in one piece."""
        fn = ir.Function(self.module, CHUNK_FN, name=f"adc.chunk.{_next_chunk(self.module)}")
        fn.linkage = "internal"
        raises, details = self.emit_chunk(fn, body)
        if (raises and visible) or details:  # details: the context holds one error's numbers
            work = i64(0)
        elif _calls_libm(fn):
            work = self.b.mul(work, i64(LIBM_WORK))
        env, tapes = self.env_for(fn)
        fn = fpenv.wrap(self.module, fn, bool(self.flags))  # pool threads: fastmath's FTZ
        status = self.b.call(self.libc(*_PARALLEL_FOR), [fn, env, n, work,
                                                         i64(self.parallel_cap)])
        self.tapes_back(tapes)
        self.exit_unless_ok(status, "chunk")

    def outlined_range(self, n, body, name):
        """body(lo, hi) over [0, n), lowered into a noinline function `adc.<name>.N` of its
        own and called here, in this thread (closure-converted like a piece: jit.py's parts
        then compile it apart from this function, which a long run of loops would otherwise
        make the largest of its module). Loops inside it may still go to the pool."""
        fn = ir.Function(self.module, CHUNK_FN, name=f"adc.{name}.{_next_chunk(self.module)}")
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        self.emit_chunk(fn, body, piece=False)
        env, tapes = self.env_for(fn)
        status = self.b.call(fn, [env, i64(0), n])
        self.tapes_back(tapes)
        self.exit_unless_ok(status, "outlined")

    def env_for(self, fn):
        """Closure-convert fn (_capture) and fill its env here. Returns a pointer to it and
        the pairs (tape, copy) that tapes_back must copy back after the call.

        Called outside this function's loops, fn gets a copy of each of this function's
        tapes it pushes or pops, not the tape's own stack slot: a slot whose address is
        stored somewhere escapes, and LLVM then keeps the tape's top and capacity in memory
        in every loop of this function that pushes (GradBench det's forward loop, whose
        reversed loop is an outlined nest, stored and reloaded them on every trip: a third
        of the gradient's time). Inside a loop fn takes the slot itself: there each call
        would copy the tapes in and out (GradBench lstm's gradient, whose time-step loop
        calls its nests: 5% more time), and the tapes are the nests' work anyway. Where the
        caller copies, fn copies too (_local_tapes), for its own loops' sake."""
        loads = {}
        captured = _capture(fn, loads)
        copied = () if self.loop_bodies else [v for v in captured if v in self.tapes]
        _local_tapes(fn, [loads[id(v)] for v in copied])  # (fn's side of the copies)
        env_type = ir.LiteralStructType([v.type for v in captured])
        env = self.scratch(env_type, "env")
        tapes = []
        for k, v in enumerate(captured):
            if v in copied:
                copy = self.scratch(TAPE, "tape.copy")
                self.b.store(self.b.load(v, typ=TAPE), copy)
                tapes.append((v, copy))
                v = copy
            self.b.store(v, self.b.gep(env, [i64(0), ir.Constant(I32, k)],
                                       source_etype=env_type))
        return env, tapes

    def tapes_back(self, tapes):
        """After the call: each tape as the outlined function left it (see env_for)."""
        for tape, copy in tapes:
            self.b.store(self.b.load(copy, typ=TAPE), tape)

    def exit_unless_ok(self, status, label):
        failed = self.func.append_basic_block(f"{label}.fail")
        done = self.func.append_basic_block(f"{label}.ok")
        self.b.cbranch(self.b.icmp_signed("!=", status, ir.Constant(I32, OK)), failed, done)
        self.b.position_at_end(failed)
        self.exit(status)
        self.b.position_at_end(done)

    def emit_chunk(self, fn, body, piece=True):
        """Lower body(lo, hi) into `fn` with this lowering; returns whether it may fail.
        `piece`: fn is a piece the pool runs (its loops do not split again)."""
        saved = {name: getattr(self, name) for name in _SWAPPED}
        saved_ctx = self.ctx
        try:
            self.func = fn
            entry = fn.append_basic_block("entry")
            self.allocas = ir.IRBuilder(entry)
            self.status = alloca(self.allocas, I32, name="status")
            self.cleanup_bb = fn.append_basic_block("cleanup")
            start = fn.append_basic_block("body")
            self.b = Builder(start)
            self.exits = {}
            self.loop_bodies = 0
            self.in_chunk = piece or self.in_chunk
            _, lo, hi = fn.args
            body(lo, hi)
            self.exit(OK)
            details = _writes_into(fn, saved_ctx)
            assert not _allocates(fn), "a parallel piece may not allocate (the call's pool " \
                "of buffers is not shared between threads)"
            raises = bool(self.exits) or details
            self.allocas.branch(start)
            cleanup = ir.IRBuilder(self.cleanup_bb)
            cleanup.ret(cleanup.load(self.status, typ=I32))
        finally:
            for name, value in saved.items():
                setattr(self, name, value)
        return raises, details

    # -- loop nests ------------------------------------------------------------------------
    def parallel_loops(self, shape, strides, body, writes=None, work=None):
        """self.loops(shape, strides, body), cut along the first axis when the pool may.
        `writes`: the arrays the body writes into, other than a new result (their rows must
        be apart; when one is not the kernel's own, a body that may raise runs whole).
        `work`: the elements the loops touch, when not one per index of `shape` (0: run whole);
        without it the body is elementwise and its innermost loop is split (arrays.loops)."""
        split = work is None
        if self.parallel_cap is None or not shape:
            self.loops(shape, strides, body, split=split)
            return
        work = self.count(shape) if work is None else work
        for a in writes or ():
            work = self.b.select(self.rows_apart(a), work, i64(0))

        def piece(lo, hi):
            bases = [self.advance(i64(0), lo, s[0]) for s in strides]
            self.loops([self.b.sub(hi, lo)] + list(shape[1:]), strides, body, bases=bases,
                       split=split)

        visible = any(a.origin != "alloc" for a in writes or ())
        self.parallel_range(shape[0], work, piece, visible)

    def rows_apart(self, a):
        """Whether different indices of a's first axis reach different elements: |stride 0|
        is more than the span of the other axes (or there is at most one index)."""
        b = self.b
        span = i64(0)
        for n, s in zip(a.shape[1:], a.strides[1:]):
            span = b.add(span, b.mul(_magnitude(b, s), b.sub(n, i64(1))))
        apart = b.icmp_signed(">", _magnitude(b, a.strides[0]), span)
        return b.or_(apart, b.icmp_signed("<=", a.shape[0], i64(1)))

    def zero_fill(self, array):
        """All bits zero, in blocks of memset on the pool for a large array (one chunk
        function, `adc.rt.chunk_zero` in the runtime library; its env: the data and byte count)."""
        if self.parallel_cap is None:
            super().zero_fill(array)
            return
        b = self.b
        count = self.count(array.shape)
        size = b.mul(count, i64(ITEMSIZE[array.dtype]))
        blocks = b.sdiv(b.add(size, i64(ZERO_BLOCK - 1)), i64(ZERO_BLOCK))
        env = self.scratch(ZERO_ENV, "zero.env")
        b.store(array.data, b.gep(env, [i64(0), ir.Constant(I32, 0)], source_etype=ZERO_ENV))
        b.store(size, b.gep(env, [i64(0), ir.Constant(I32, 1)], source_etype=ZERO_ENV))
        b.call(self.libc(*_PARALLEL_FOR), [zero_chunk(self.module), env, blocks, count,
                                           i64(self.parallel_cap)])  # it cannot fail

    # -- pairwise sums ---------------------------------------------------------------------
    def pairwise_call(self, x, base, n, strides, dtype):
        """numpy's pairwise_sum of n elements: the top levels of its tree as fixed pieces on
        the pool, added back up the tree in the same order (see the module docstring), by a
        function shared like the pairwise function it calls (`adc.pairwise_tree.K`)."""
        if self.parallel_cap is None:
            return super().pairwise_call(x, base, n, strides, dtype)
        fn, params = self.pairwise_fn(x, strides, dtype)
        tree = self.module.globals.get(fn.name.replace("adc.pairwise.", "adc.pairwise_tree."))
        if tree is None:
            tree = self.tree_fn(fn, len(params), strides, dtype)
        bases = base.items if isinstance(base, Pack) else [base]
        out = self.scratch(REG[dtype], "pairwise")
        self.b.call(tree, [self.ctx] + params + bases + [n, out])
        return self.b.load(out, typ=REG[dtype])

    def tree_fn(self, fn, nparams, strides, dtype):
        """`i32 adc.pairwise_tree.K(ctx, params..., bases..., n, out*)`: the pairwise function
        fn of the same signature, on 2**depth pieces of the tree when n is large enough."""
        tree = ir.Function(self.module, fn.function_type,
                           name=fn.name.replace("adc.pairwise.", "adc.pairwise_tree."))
        planning(tree)  # control, once a sum (the pieces and the pairwise sums compute)
        sub = self.sub_lowering(tree)
        args = list(tree.args)
        params, bases = args[1:1 + nparams], args[1 + nparams:-2]
        moving = iter(params[nparams - sum(not isinstance(c, ir.Constant) for c in strides):])
        strides = [c if isinstance(c, ir.Constant) else next(moving) for c in strides]
        sub.b.store(sub.tree_sum(fn, params, bases, strides, args[-2], dtype), sub.out)
        sub.finish()
        return tree

    def tree_sum(self, fn, params, bases, strides, n, dtype):
        b = self.b
        t = REG[dtype]
        ratio = b.sdiv(n, b.call(self.libc(*_UNIT), []))
        depth = b.sub(i64(63), b.ctlz(b.or_(ratio, i64(1)), ir.Constant(I1, 0)))
        depth = b.select(b.icmp_signed(">", depth, i64(MAX_DEPTH)), i64(MAX_DEPTH), depth)
        result = self.scratch(t, "sum")
        with b.if_else(b.icmp_signed("==", depth, i64(0))) as (serial, split):
            with serial:
                b.call(fn, [self.ctx] + params + bases + [n, result])
            with split:
                self.pairwise_pieces(fn, params, bases, strides, n, dtype, depth, result)
        return b.load(result, typ=t)

    def pairwise_pieces(self, fn, params, bases, strides, n, dtype, depth, result):
        b = self.b
        t = REG[dtype]
        parts = ir.ArrayType(t, 1 << MAX_DEPTH)
        partial = self.scratch(parts, "pieces")
        pieces = b.shl(i64(1), depth)

        def piece(lo, hi):
            def one(i):
                k = self.b.add(lo, i)
                start, size = self.piece_bounds(k, depth, n)
                moved = [self.b.add(c, self.b.mul(start, s)) for c, s in zip(bases, strides)]
                cell = self.b.gep(partial, [i64(0), k], source_etype=parts)
                self.b.call(fn, [self.ctx] + params + moved + [size, cell])

            self.loop(self.b.sub(hi, lo), one, kind="control")

        self.parallel_range(pieces, n, piece)
        self.add_up_tree(partial, parts, pieces, t)
        b.store(b.load(b.gep(partial, [i64(0), i64(0)], source_etype=parts), typ=t), result)

    def piece_bounds(self, k, depth, n):
        """(start, size) of piece k of the tree's level `depth`: from the root, take the
        first half (n / 2 rounded down to a multiple of 8) or the rest, by k's bits."""
        b = self.b
        start, size = self.scratch(I64, "start"), self.scratch(I64, "size")
        b.store(i64(0), start)
        b.store(n, size)

        def level(j):
            m = b.load(size, typ=I64)
            half = b.sdiv(m, i64(2))
            half = b.sub(half, b.srem(half, i64(8)))
            bit = b.and_(b.lshr(k, b.sub(b.sub(depth, i64(1)), j)), i64(1))
            second = b.icmp_signed("!=", bit, i64(0))
            s = b.load(start, typ=I64)
            b.store(b.select(second, b.add(s, half), s), start)
            b.store(b.select(second, b.sub(m, half), half), size)

        self.loop(depth, level)
        return b.load(start, typ=I64), b.load(size, typ=I64)

    def add_up_tree(self, partial, parts, pieces, t):
        """partial[j] = partial[2j] + partial[2j + 1], level by level, to partial[0]."""
        b = self.b
        width = self.scratch(I64, "width")
        b.store(pieces, width)
        head = self.func.append_basic_block("tree.level")
        inside = self.func.append_basic_block("tree.add")
        done = self.func.append_basic_block("tree.done")
        b.branch(head)
        b.position_at_end(head)
        w = b.load(width, typ=I64)
        b.cbranch(b.icmp_signed(">", w, i64(1)), inside, done)
        b.position_at_end(inside)
        half = b.sdiv(w, i64(2))

        def pair(j):
            def cell(k):
                return b.gep(partial, [i64(0), k], source_etype=parts)
            left = b.load(cell(b.mul(j, i64(2))), typ=t)
            right = b.load(cell(b.add(b.mul(j, i64(2)), i64(1))), typ=t)
            b.store(b.fadd(left, right, flags=self.flags), cell(j))

        self.loop(half, pair, kind="control")
        b.store(half, width)
        b.branch(head)
        b.position_at_end(done)


def _magnitude(b, s):
    return b.select(b.icmp_signed("<", s, i64(0)), b.neg(s), s)


def _writes_into(fn, ctx):
    """Whether fn stores into the call's context (the numbers of an error message, which
    pieces running at once would overwrite)."""
    for block in fn.blocks:
        for instr in block.instructions:
            if isinstance(instr, ir.StoreInstr):
                ptr = instr.operands[1]
                if ptr is ctx or (isinstance(ptr, ir.GEPInstr) and ptr.pointer is ctx):
                    return True
    return False


def _calls_libm(fn):
    """Whether fn calls a libm function (directly, or as an LLVM intrinsic such as
    llvm.pow.f64 that becomes one)."""
    for block in fn.blocks:
        for instr in block.instructions:
            if isinstance(instr, ir.CallInstr):
                name = getattr(instr.callee, "name", "")
                if name.startswith("llvm."):
                    name = name.split(".")[1]
                if name in LIBM or (name.endswith("f") and name[:-1] in LIBM):
                    return True
    return False


def _allocates(fn):
    """Whether fn takes or gives back a buffer of the call's pool (memory.py), which only the
    calling thread may do."""
    for block in fn.blocks:
        for instr in block.instructions:
            if isinstance(instr, ir.CallInstr) and getattr(instr.callee, "name", "") in (
                    "adc.buffer", "adc.unbuffer", "adc.carve"):
                return True
    return False


def _next_chunk(module):
    k = getattr(module, "adc_chunks", 0)
    module.adc_chunks = k + 1
    return k


# -- closure conversion ----------------------------------------------------------------------

def _foreign(value, fn):
    """Whether `value` is a register of another function than fn."""
    if isinstance(value, ir.Instruction):
        return value.parent.parent is not fn
    if isinstance(value, ir.Argument):
        return value.parent is not fn
    if isinstance(value, ir.Block):
        if value.parent is not fn:
            raise AssertionError("a parallel loop body branches out of its function (this is "
                                 "a bug in adcompile)")
    return False


def _operands(instr):
    """Every value instr refers to (llvmlite keeps some outside `operands`)."""
    values = list(instr.operands)
    if isinstance(instr, ir.PhiInstr):
        values += [v for v, _ in instr.incomings]
    for name in ("pointer", "aggregate", "value"):
        v = getattr(instr, name, None)
        if isinstance(v, ir.Value):
            values.append(v)
    values += [v for v in getattr(instr, "indices", ()) if isinstance(v, ir.Value)]
    return values


def _capture(fn, loads=None):
    """Make fn stand alone: each register of another function that its instructions use is
    recomputed at the top of its entry block when it is a cheap pure instruction (integer
    arithmetic, comparisons, selects, casts, address arithmetic: REMAT, at most REMAT_BUDGET
    of them), so LLVM still sees what the enclosing code knew (a stride that is 0 or 1 by a
    select on a length, two views of one array); anything else is loaded from fn's env
    argument (fn.args[0]). Returns the loaded registers, in env's order; `loads` (a dict)
    gets id(register) -> its load in fn."""
    uses = []
    for block in fn.blocks:
        for instr in block.instructions:
            uses += [v for v in _operands(instr) if _foreign(v, fn)]
    if not uses:
        return []
    conversion = _Conversion(fn)
    for v in uses:
        conversion.local(v)
    conversion.fill_env()
    for block in fn.blocks:
        for instr in block.instructions:
            _rebind(instr, conversion.mapped)
    if loads is not None:
        loads.update((id(v), conversion.mapped[id(v)]) for v in conversion.captured)
    return conversion.captured


def _local_tapes(fn, pointers):
    """fn works on a copy of each tape whose slot it takes from its env (`pointers`, the
    loads of their addresses): a stack slot of its own, filled at its entry and copied back
    before each return. Through the env's pointer LLVM must keep a tape's top and buffer in
    memory (any store of fn's may alias them): a reversed loop outlined as a nest stored and
    reloaded each tape's top on every pop (GradBench det's reverse sweep); its own slot
    becomes registers."""
    if not pointers:
        return
    entry = fn.blocks[0]
    b = ir.IRBuilder(entry)
    b.position_after(max(pointers, key=entry.instructions.index))
    copies, made = {}, []
    for pointer in pointers:
        copy = b.alloca(TAPE, name="tape.local")
        state = b.load(pointer, typ=TAPE)
        made += [copy, state, b.store(state, copy)]
        copies[id(pointer)] = copy
    made = set(map(id, made))
    for block in fn.blocks:
        for instr in block.instructions:
            if id(instr) not in made:
                _rebind(instr, copies)
    for block in fn.blocks:
        last = block.instructions[-1] if block.instructions else None
        if isinstance(last, ir.instructions.Ret):
            b.position_before(last)
            for pointer in pointers:
                b.store(b.load(copies[id(pointer)], typ=TAPE), pointer)


REMAT = frozenset(["add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "icmp",
                   "select", "zext", "sext", "trunc", "getelementptr"])
REMAT_BUDGET = 96


class _Conversion:
    """The registers fn takes from its enclosing function (see _capture)."""

    def __init__(self, fn):
        self.fn = fn
        self.mapped = {}  # id(foreign register) -> its value in fn
        self.captured = []
        self.loads = []  # placeholders, filled by fill_env once env's type is known
        self.budget = REMAT_BUDGET
        entry = fn.blocks[0]
        self.b = ir.IRBuilder(entry)
        self.b.position_at_start(entry)

    def local(self, v):
        if not _foreign(v, self.fn):
            return v
        found = self.mapped.get(id(v))
        if found is None:
            found = self.recompute(v) if self.cheap(v) else self.capture(v)
            self.mapped[id(v)] = found
        return found

    def cheap(self, v):
        return isinstance(v, ir.Instruction) and v.opname in REMAT and self.budget > 0 and \
            type(v) in (ir.Instruction, ir.ICMPInstr, ir.SelectInstr, ir.CastInstr,
                        ir.GEPInstr) and not (isinstance(v, ir.ICMPInstr) and
                                              v.opname != "icmp")

    def recompute(self, v):
        self.budget -= 1
        ops = [self.local(x) for x in v.operands]
        block = self.b.block
        if isinstance(v, ir.GEPInstr):
            new = ir.GEPInstr(block, ops[0], ops[1:], v.inbounds, "", v.source_etype)
        elif isinstance(v, ir.ICMPInstr):
            new = ir.ICMPInstr(block, v.op, ops[0], ops[1], "")
        elif isinstance(v, ir.SelectInstr):
            new = ir.SelectInstr(block, *ops, name="", flags=v.flags)
        elif isinstance(v, ir.CastInstr):
            new = ir.CastInstr(block, v.opname, ops[0], v.type, "")
        else:
            new = ir.Instruction(block, v.type, v.opname, ops, "", flags=v.flags)
        self.b._insert(new)
        return new

    def capture(self, v):
        self.captured.append(v)
        slot = ir.Instruction(self.b.block, v.type, "load", [], "")  # replaced in fill_env
        self.loads.append(slot)
        return slot

    def fill_env(self):
        """Load every captured register from env, before everything else."""
        env_type = ir.LiteralStructType([v.type for v in self.captured])
        self.b.position_at_start(self.fn.blocks[0])
        real = {}
        for k, (v, slot) in enumerate(zip(self.captured, self.loads)):
            ptr = self.b.gep(self.fn.args[0], [i64(0), ir.Constant(I32, k)],
                             source_etype=env_type)
            real[id(slot)] = self.b.load(ptr, typ=v.type)
        for key, value in self.mapped.items():
            self.mapped[key] = real.get(id(value), value)
        for block in self.fn.blocks:
            for instr in block.instructions:
                _rebind(instr, real)


def _rebind(instr, loads):
    def new(v):
        return loads.get(id(v), v) if isinstance(v, ir.Value) else v

    operands = [new(v) for v in instr.operands]
    instr.operands = type(instr.operands)(operands) if isinstance(instr.operands, tuple) \
        else operands
    if isinstance(instr, ir.PhiInstr):
        instr.incomings = [(new(v), blk) for v, blk in instr.incomings]
    for name in ("pointer", "aggregate", "value"):
        v = getattr(instr, name, None)
        if isinstance(v, ir.Value):
            setattr(instr, name, new(v))
    if isinstance(getattr(instr, "indices", None), (list, tuple)):
        instr.indices = [new(v) for v in instr.indices]

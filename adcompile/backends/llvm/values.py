"""How IR values live in LLVM registers ("flattening"), shared by the kernel lowering
(lower.py, arrays.py, linalg.py) and the entry point (entry.py).

Every IR value becomes a fixed list of LLVM values: a scalar is one register; an array is
(owner, data pointer, shape[n], strides[n]) with strides counted in elements; a tuple is its
items' lists concatenated; a tape is a pointer to a {buffer, top, capacity} slot. The owner of
an array is the numpy array it was passed in as (arguments and their views), or the trailer of
a buffer the kernel allocated (see `memory.py`); both keep a type pointer at byte 8, which is
how code that cannot know statically tells them apart. A lazy value (fusion.py) is its shape,
its leaves' data pointers, its scalar operands and its leaves' strides.
"""

import operator
import os

import llvmlite.ir as ir

from adcompile.ir import types as T

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
F32, F64 = ir.FloatType(), ir.DoubleType()
REG = {"f64": F64, "f32": F32, "i64": I64, "bool": I1}  # in registers
MEM = {"f64": F64, "f32": F32, "i64": I64, "bool": I8}  # in memory (arrays, tapes)
ITEMSIZE = {"f64": 8, "f32": 4, "i64": 8, "bool": 1}
# a tape: its buffer, top, capacity, and the trailer of the buffer when it is a large block
# (null while it is realloc's: memory.py's tape_grow_fn)
TAPE = ir.LiteralStructType([PTR, I64, I64, PTR])
# buffers of up to POOL_LIMIT bytes (a quarter of a slab) are carved from the call's slabs in
# POOL_CLASSES size classes (128 bytes, then four per power of two) and reused within the call;
# larger ones are blocks of their own, kept in the process's cache between calls (memory.py)
POOL_LIMIT, POOL_CLASSES = 1 << 14, 29
# the context the entry point passes: thread state, the list of live kernel-allocated buffers,
# two integers for an error message (an index and a size), the heads of the free lists of the
# buffer pool, the list of slabs in use, the free part of the current slab (start, end), and the
# spare slabs taken from the process's cache, and the free large buffers (taken from the
# process's cache, or released by this call)
CONTEXT = ir.LiteralStructType([PTR, PTR, I64, I64, ir.ArrayType(PTR, POOL_CLASSES),
                                PTR, PTR, PTR, PTR, PTR])
CTX_TSTATE, CTX_TEMPS, CTX_ERR, CTX_POOL, CTX_SLABS, CTX_CURSOR, CTX_LIMIT, CTX_SPARE = (
    0, 1, 2, 4, 5, 6, 7, 8)
CTX_LARGE = 9

OK, PYTHON_ERROR = 0, 1  # PYTHON_ERROR: an exception is already set


def zero(t):
    return ir.Constant(t, 0.0 if t in (F32, F64) else 0)


def i64(n):
    return ir.Constant(I64, n)


def i32(n):
    return ir.Constant(I32, n)


def opaque(value):
    """llvmlite still types the pointers of allocas and globals; make them plain `ptr`."""
    value.type = PTR
    return value


class Builder(ir.IRBuilder):
    """llvmlite's builder, except that integer arithmetic whose result is one of its operands
    or a constant emits nothing: `x + 0`, `x - 0`, `x * 1`, `x * 0`, `b and true`,
    `b or false`, a select on a constant, +, -, * and signed comparisons of two constants
    (when the i64 result does not wrap). Array lowering makes such arithmetic at every
    offset (a base of 0, a unit or zero stride, a check that is always true); LLVM folds it
    in its first pass, but 7 % of a gradient's instructions were these, each built,
    printed and parsed for nothing, and the strides they hid from arrays.loops made it emit
    a second, generic loop nest. Only integers: floating-point `x + 0.0` is not x (-0.0)."""

    def add(self, lhs, rhs, name="", flags=()):
        if _is_int(rhs, 0) or _is_int(lhs, 0):
            return lhs if _is_int(rhs, 0) else rhs
        return _fold(lhs, rhs, operator.add) or super().add(lhs, rhs, name=name, flags=flags)

    def sub(self, lhs, rhs, name="", flags=()):
        if _is_int(rhs, 0):
            return lhs
        return _fold(lhs, rhs, operator.sub) or super().sub(lhs, rhs, name=name, flags=flags)

    def mul(self, lhs, rhs, name="", flags=()):
        for one, other in ((lhs, rhs), (rhs, lhs)):
            if _is_int(one, 1):
                return other
            if _is_int(one, 0):
                return one
        return _fold(lhs, rhs, operator.mul) or super().mul(lhs, rhs, name=name, flags=flags)

    def and_(self, lhs, rhs, name="", flags=()):
        for one, other in ((lhs, rhs), (rhs, lhs)):
            if _is_int(one, 1) and one.type == I1:
                return other
        return super().and_(lhs, rhs, name=name, flags=flags)

    def or_(self, lhs, rhs, name="", flags=()):
        for one, other in ((lhs, rhs), (rhs, lhs)):
            if _is_int(one, 0) and one.type == I1:
                return other
        return super().or_(lhs, rhs, name=name, flags=flags)

    def select(self, cond, lhs, rhs, name="", flags=()):
        if isinstance(cond, ir.Constant) and isinstance(cond.constant, (bool, int)):
            return lhs if cond.constant else rhs
        return super().select(cond, lhs, rhs, name=name, flags=flags)

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        if _both(lhs, rhs):
            return ir.Constant(I1, int(_COMPARE[cmpop](lhs.constant, rhs.constant)))
        return super().icmp_signed(cmpop, lhs, rhs, name=name)


_COMPARE = {"==": int.__eq__, "!=": int.__ne__, "<": int.__lt__, "<=": int.__le__,
            ">": int.__gt__, ">=": int.__ge__}


def _both(lhs, rhs):
    """Whether both operands are i64 constants (Python ints)."""
    return all(isinstance(v, ir.Constant) and v.type == I64 and type(v.constant) is int
               for v in (lhs, rhs))


def _fold(lhs, rhs, op):
    """The i64 constant op(lhs, rhs) of two constant operands, or None (not constants, or
    the result wraps, which is left to LLVM)."""
    if not _both(lhs, rhs):
        return None
    result = op(lhs.constant, rhs.constant)
    return ir.Constant(I64, result) if -(1 << 63) <= result < (1 << 63) else None


def _is_int(value, number):
    """Whether `value` is the integer constant `number` (of any width)."""
    return isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType) and \
        isinstance(value.constant, (bool, int)) and value.constant == number


def alloca(builder, typ, name=""):
    return opaque(builder.alloca(typ, name=name))


def external(module, name, typ=I8):
    """An object of the running interpreter, bound to `name` when the code is linked."""
    g = module.globals.get(name)
    if g is None:
        g = opaque(ir.GlobalVariable(module, typ, name=name))
        g.linkage = "external"
    return g


def shared(module, name, fnty, build):
    """A helper every kernel calls (allocating and releasing buffers, returning slabs, the
    zero-fill piece): defined once per process in the runtime library (the thread pool's
    library, pool.py, whose module has `adc_runtime` set), where build(fn) writes its body,
    and only declared in a kernel's module, linked to that definition (pool.runtime_symbols):
    re-emitted in every module, these helpers were 5-15 % of a GradBench gradient's LLVM
    time. Their names carry a dot, like every symbol we define. ADCOMPILE_LLVM_SHARED=0 (for
    comparisons): every module defines its own, internal copies, as before."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, fnty, name=name)
        if getattr(module, "adc_runtime", False):
            build(fn)
        elif not SHARED:
            fn.linkage = "internal"
            build(fn)
    return fn


SHARED = os.environ.get("ADCOMPILE_LLVM_SHARED", "1") != "0"


def loop_hints(module, kind="array"):
    """A loop's own `llvm.loop` node (its first operand is itself), by kind of loop:
    - "array": not unrolled by a trip count known at run time: array loops run what the
      vectoriser leaves scalar (broadcast strides, strict reductions, libm calls), where
      unrolling gains nothing and LLVM's remainder loops cost compile time; vectorised
      without interleaving (one vector an iteration, so no epilogue loop either: 10-16 %
      of the LLVM time of the MLP and ode gradients, no run time measured);
    - "scalar": an array loop kept scalar (the generic-stride loop of a split nest,
      arrays.loops);
    - "control": bookkeeping in array code (the loop handing out the pieces of a parallel
      sum, the one adding them up): neither vectorised nor unrolled, even by a small
      constant trip count."""
    hints = _LOOP_HINTS[kind]
    items = [module.add_metadata([ir.MetaDataString(module, h[0]), *h[1:]]) for h in hints]
    node = ir.values.MDValue(module, items, name=str(len(module.metadata)))
    node.operands = (node, *items)
    return node


_NO_RUNTIME_UNROLL = ("llvm.loop.unroll.runtime.disable",)
_SCALAR = (("llvm.loop.vectorize.enable", ir.Constant(ir.IntType(1), 0)),
           ("llvm.loop.interleave.count", ir.Constant(ir.IntType(32), 1)))
_LOOP_HINTS = {"array": (_NO_RUNTIME_UNROLL, _SCALAR[1]), "scalar": (_NO_RUNTIME_UNROLL, *_SCALAR),
               "control": (*_SCALAR, ("llvm.loop.unroll.disable",))}


class ArrayV:
    """An array in registers: its owner, data pointer, shape and element strides. `origin`
    says what the owner is, when that is known while compiling: "arg" (an argument array,
    never counted), "alloc" (a buffer the kernel allocated, reference counted) or None
    (either: decided at run time)."""

    __slots__ = ("dtype", "obj", "data", "shape", "strides", "origin")

    def __init__(self, dtype, obj, data, shape, strides, origin=None):
        self.dtype, self.obj, self.data = dtype, obj, data
        self.shape, self.strides = list(shape), list(strides)
        self.origin = origin

    @property
    def ndim(self):
        return len(self.shape)

    def flat(self):
        return [self.obj, self.data, *self.shape, *self.strides]

    def view(self, data, shape, strides):
        """Another view of the same owner."""
        return ArrayV(self.dtype, self.obj, data, shape, strides, self.origin)


class TupleV:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = list(items)

    def flat(self):
        return [x for item in self.items for x in flat(item)]


class TapeV:
    __slots__ = ("slot", "item")

    def __init__(self, slot, item):
        self.slot, self.item = slot, item

    def flat(self):
        return [self.slot]


class Pack:
    """One offset (or stride) per leaf of a lazy value, in the order of its leaves."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = list(items)


class LazyNode:
    """One scalar op of a lazy value's tree: `op` on elements (array operands replaced by
    `slots`), each operand's part (None: a scalar, an ArrayV: a leaf, a LazyNode) and the
    registers of its scalar operands."""

    __slots__ = ("op", "slots", "parts", "scalars")

    def __init__(self, op, slots, parts, scalars):
        self.op, self.slots, self.parts, self.scalars = op, slots, parts, scalars

    def walk(self):
        yield self
        for part in self.parts:
            if isinstance(part, LazyNode):
                yield from part.walk()

    def leaves(self):
        for part in self.parts:
            if isinstance(part, LazyNode):
                yield from part.leaves()
            elif part is not None:
                yield part

    def signature(self):
        return (self.op.prim, repr(sorted(self.op.attrs.items(), key=lambda kv: kv[0])),
                repr(self.op.results[0].type), tuple(repr(v.type) for v, _ in self.scalars),
                tuple(part.signature() if isinstance(part, LazyNode) else
                      None if part is None else (part.dtype, part.origin)
                      for part in self.parts))

    def rebuilt(self, leaves, registers):
        """This tree holding other leaves and scalar registers (in the order of leaves()
        and of walk())."""
        scalars = [(v, next(registers)) for v, _ in self.scalars]
        parts = [part.rebuilt(leaves, registers) if isinstance(part, LazyNode) else
                 None if part is None else next(leaves) for part in self.parts]
        return LazyNode(self.op, self.slots, parts, scalars)


class LazyV:
    """A lazy array in registers: dtype, shape, the strides of its leaves (a Pack per axis)
    and the tree. Flattened as the shape, the leaves' data pointers, the scalar registers and
    the strides."""

    __slots__ = ("dtype", "shape", "strides", "node")

    def __init__(self, dtype, shape, strides, node):
        self.dtype, self.shape, self.strides, self.node = dtype, list(shape), strides, node

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def width(self):
        """The number of leaves (offsets per element)."""
        return sum(1 for _ in self.node.leaves())

    def flat(self):
        return [*self.shape, *(leaf.data for leaf in self.node.leaves()),
                *(reg for node in self.node.walk() for _, reg in node.scalars),
                *(s for pack in self.strides for s in pack.items)]

    def rebuilt(self, comps):
        shape = [next(comps) for _ in self.shape]
        leaves = [ArrayV(leaf.dtype, None, next(comps), [], [], leaf.origin)
                  for leaf in self.node.leaves()]
        registers = [next(comps) for node in self.node.walk() for _ in node.scalars]
        node = self.node.rebuilt(iter(leaves), iter(registers))
        strides = [Pack([next(comps) for _ in pack.items]) for pack in self.strides]
        return LazyV(self.dtype, shape, strides, node)

    def signature(self):
        return self.dtype, len(self.shape), self.node.signature()


class JoinV:
    """A lazy one-dimensional np.concatenate (fusion.py): `pieces`, (start, length, value)
    in order, cover [0, shape[0]) without overlapping; each value is an ArrayV or LazyV of
    shape [length] whose element 0 is the join's element `start`. A consumer reads it piece
    by piece (joins.py), each piece over its own index range. It holds no reference of its
    own (its arrays are the concatenation's operands, alive until its last consumer).
    Flattened (for an outlined consumer) as its length and each piece's start, length and
    value."""

    __slots__ = ("dtype", "shape", "pieces")
    ndim = 1

    def __init__(self, dtype, shape, pieces):
        self.dtype, self.shape, self.pieces = dtype, list(shape), list(pieces)

    def flat(self):
        return [*self.shape, *(c for start, length, value in self.pieces
                               for c in [start, length, *value.flat()])]

    def signature(self):
        return ("join", self.dtype, tuple(value.signature() if isinstance(value, LazyV) else
                                          ("array", value.dtype, value.origin)
                                          for _, _, value in self.pieces))


def flat(value):
    return value.flat() if isinstance(value, (ArrayV, TupleV, TapeV, LazyV, JoinV)) else \
        ([] if value is None else [value])


def arrays_in(value):
    """The arrays of a flattened value (itself, or the items of a tuple, recursively)."""
    if isinstance(value, ArrayV):
        return [value]
    if isinstance(value, TupleV):
        return [a for item in value.items for a in arrays_in(item)]
    return []


def has_arrays(t):
    if isinstance(t, T.Array):
        return True
    return isinstance(t, T.Tuple) and any(has_arrays(item) for item in t.items)


def flat_types(t):
    """The LLVM register types that represent an IR value of type t."""
    if isinstance(t, T.Scalar):
        return [REG[t.dtype]]
    if isinstance(t, T.Array):
        return [PTR, PTR] + [I64] * (2 * t.ndim)
    if isinstance(t, T.Tuple):
        return [x for item in t.items for x in flat_types(item)]
    if isinstance(t, T.Tape):
        return [PTR]
    if isinstance(t, T.NoneType):
        return []
    raise NotImplementedError(f"the LLVM backend has no representation for {t}")


def unflat(t, values):
    """Rebuild a value of type t from its flattened LLVM values (consumes them from an
    iterator)."""
    if isinstance(t, T.Scalar):
        return next(values)
    if isinstance(t, T.Array):
        obj, data = next(values), next(values)
        shape = [next(values) for _ in range(t.ndim)]
        strides = [next(values) for _ in range(t.ndim)]
        return ArrayV(t.dtype, obj, data, shape, strides)
    if isinstance(t, T.Tuple):
        return TupleV(unflat(item, values) for item in t.items)
    if isinstance(t, T.Tape):
        return TapeV(next(values), t.item)
    if isinstance(t, T.NoneType):
        return None
    raise NotImplementedError(f"the LLVM backend has no representation for {t}")

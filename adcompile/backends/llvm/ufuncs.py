"""numpy's own inner loops for the transcendental functions of arrays (LLVM backend).

`np.exp(a)` of a float64 array runs numpy's inner loop for exp, which numpy picks at import
for the machine (on AVX-512: a vectorised polynomial, about 1 ns an element, where glibc's
scalar exp takes 4). Its results are not glibc's: on 640000 normal numbers 4.6 % of exp's
elements differ in the last bit, 27 % of tanh's, 40 % of float32 exp's. Compiled code calls
the same loop, so an elementwise transcendental function of an array gives numpy's bits and
numpy's speed; `math.exp(x[i])` of a Python float still calls the C library, as Python does
(and `np.exp` of a scalar too: a call per element would cost more than the scalar loop it
sits in; the interpreter's numpy scalars use numpy's loop there, so scalar code may differ
from it in the last bit, as numba's does).

Where the loops are. A ufunc object (PyUFuncObject) holds `functions`, an array of inner
loops, one per entry of `types` (nin + nout type numbers each); `data` holds the pointer each
loop is called with. For each function below and float32/float64 this module finds the loop
whose types are all that dtype, checks it on probe numbers against the ufunc itself (equal
bits, or the loop is not used), and gives its address to the linker as
`adc_ufunc_<prim>_<dtype>` and the address of a cell holding its data pointer as
`..._data` (addresses change from process to process; cached code names them). A loop is
called as numpy calls it: `loop(char **args, npy_intp *dimensions, npy_intp *steps, void
*data)` with the input and output pointers, the count and the byte steps.

How the kernel uses them (UfuncLowering): such an op is never lazy (fusion._fusible): a
value it consumes is computed block by block (BLOCK elements into a buffer on the stack) and
each block goes through one call of the loop, into the new array; an operand already in
memory in the loop's dtype is passed as it is, strides and all. Every array op of these
functions goes through the loop, so a value computed again (fused elsewhere, recomputed by
reverse mode) has the same bits. `np.max` and `np.min` of floats reduce with numpy's
`maximum` / `minimum` loop, called the way numpy's reduction calls it over a row
(ufunc_reduce): numpy's vectorised reduction, and for whole-array and last-axis reductions
its choice among equal zeros and NaNs. Along another axis numpy applies the loop to whole
rows, one after the other, and keeps the first NaN of a column, where the reduction of the
column may return another one (the same value, NaN; the bits of its payload may differ, as
they did before these loops). A short contiguous row with no NaN is reduced in registers by a
model of the loop's lanes fitted to numpy (short_rows): a call costs more than such a row.
Where a loop cannot be found (another layout of the struct
in a later numpy), the op is computed with the C library's function and fused as before.
`ADCOMPILE_LLVM_UFUNCS=0` turns the loops off.
"""

import ctypes
import itertools
import os
import threading
from typing import NamedTuple

import llvmlite.ir as ir
import numpy as np

from adcompile.backends.llvm.values import I1, I64, ITEMSIZE, MEM, PTR, ArrayV, external, i64
from adcompile.ir import types as T

UFUNCS = os.environ.get("ADCOMPILE_LLVM_UFUNCS", "1") != "0"
BLOCK = 512  # elements per call of a loop (a buffer of 4 KB stays in L1)
WORK = 4  # the elements of work an element of these loops counts for (parallel.py)
NAMES = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log",
         "log1p": "log1p", "expm1": "expm1", "tanh": "tanh", "sinh": "sinh", "cosh": "cosh",
         "asin": "arcsin", "acos": "arccos", "atan": "arctan", "log2": "log2",
         "log10": "log10"}
REDUCERS = {"amax": "maximum", "amin": "minimum"}  # np.max and np.min reduce with these
_TYPES = {"f64": (np.float64, 12), "f32": (np.float32, 11)}  # numpy's type numbers (NPY_DOUBLE)


class _UFunc(ctypes.Structure):
    """The head of numpy's PyUFuncObject, as far as the type table (numpy 1.x and 2.x)."""
    _fields_ = [("refcnt", ctypes.c_ssize_t), ("type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int),
                ("identity", ctypes.c_int), ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)), ("ntypes", ctypes.c_int),
                ("reserved1", ctypes.c_int), ("name", ctypes.c_char_p),
                ("types", ctypes.POINTER(ctypes.c_char))]


_LOOP = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_ssize_t),
                         ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p)
_lock = threading.Lock()
_found = None  # {(prim, dtype): (loop address, cell holding the data pointer)}


def _loops():
    global _found
    with _lock:
        if _found is None:
            _found = {} if not UFUNCS else {
                (prim, dtype): loop for prim in list(NAMES) + list(REDUCERS) for dtype in _TYPES
                for loop in [_loop(prim, dtype)] if loop is not None}
        return _found


def _loop(prim, dtype):
    """(loop address, data cell) of numpy's loop for prim on dtype, checked; None."""
    name = NAMES.get(prim) or REDUCERS[prim]
    ufunc = getattr(np, name)
    head = _UFunc.from_address(id(ufunc))
    arity = 1 if prim in NAMES else 2
    if head.name != name.encode() or (head.nin, head.nout) != (arity, 1) or \
            not 0 < head.ntypes < 256:
        return None
    scalar, number = _TYPES[dtype]
    width = arity + 1
    for k in range(head.ntypes):
        if all(ord(head.types[width * k + j]) == number for j in range(width)):
            address, data = head.functions[k], head.data[k]
            break
    else:
        return None
    check = _agrees if prim in NAMES else _reduces
    if not address or not check(ufunc, scalar, address, data):
        return None
    return address, ctypes.c_void_p(data)


def _call(address, data, pointers, steps, n):
    args = (ctypes.c_void_p * len(pointers))(*pointers)
    _LOOP(address)(args, (ctypes.c_ssize_t * 1)(n), (ctypes.c_ssize_t * len(steps))(*steps), data)


def _agrees(ufunc, scalar, address, data):
    """Whether the loop at `address` gives the ufunc's bits on probe numbers (contiguous and
    strided, with a remainder): 2000 numbers of a wide range, where two loops that differ in
    a few percent of last bits (libm's exp and numpy's) cannot agree, and special ones."""
    with np.errstate(all="ignore"):
        rng = np.random.default_rng(11)
        probe = np.concatenate([rng.normal(0.0, 1.0, 700), rng.uniform(-30.0, 30.0, 600),
                                np.exp(rng.uniform(-40.0, 40.0, 600)), rng.uniform(-1, 1, 97),
                                [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, 710.0, -745.5,
                                 1.0, -1.0, 0.5]]).astype(scalar)
        want = ufunc(probe)
        for step in (1, 2):
            source = probe[::step]
            out = np.empty_like(source)
            _call(address, data, [source.ctypes.data, out.ctypes.data],
                  [source.strides[0], out.strides[0]], len(source))
            if out.tobytes() != want[::step].tobytes():
                return False
    return True


def _reduces(ufunc, scalar, address, data):
    """Whether the loop at `address`, called as numpy's reduction calls it (the first element
    in the output, the rest read into it: `reduce_loop`), gives `ufunc.reduce`'s bits on
    probe arrays of zeros of both signs and NaNs of several payloads."""
    rng = np.random.default_rng(7)
    quiet = np.array([0x7FF8000000000001, 0xFFF8000000000002], np.uint64).view(np.float64)
    for n in (1, 2, 3, 9, 40, 41, 130):
        for pool in ([0.0, -0.0], [0.0, -0.0, 1.0, -1.0, np.nan, *quiet]):
            source = rng.choice(np.array(pool), n).astype(scalar)
            out = source[:1].copy()
            if n > 1:
                _call(address, data, [out.ctypes.data, source[1:].ctypes.data, out.ctypes.data],
                      [0, source.itemsize, 0], n - 1)
            if out.tobytes() != ufunc.reduce(source).reshape(1).tobytes():
                return False
    return True


def replaces(op):
    """Whether `op` is computed by numpy's loop: an elementwise function of NAMES whose
    result is a float32 or float64 array, where the loop was found."""
    if op.prim not in NAMES or len(op.results) != 1:
        return False
    t = op.results[0].type
    return isinstance(t, T.Array) and (op.prim, t.dtype) in _loops()


def reduces(prim, dtype):
    """Whether np.max or np.min (`prim` amax or amin) of `dtype` elements reduces with numpy's
    loop (ufunc_reduce)."""
    return prim in REDUCERS and (prim, dtype) in _loops()


def calls(op):
    """Whether the code of `op` may call one of numpy's loops."""
    return replaces(op) or (op.prim in REDUCERS and isinstance(op.operands[0].type, T.Array)
                            and reduces(op.prim, op.operands[0].type.dtype))


def key(fn_ops=()):
    """What cached code depends on: the loops in use, and the short rows' lane models of the
    np.min / np.max reductions among `fn_ops` (short_rows)."""
    reduced = sorted({(op.prim, op.operands[0].type.dtype) for op in fn_ops
                      if op.prim in REDUCERS and calls(op)})
    return tuple(sorted(_loops())), tuple((k, short_rows(*k)) for k in reduced)


# -- short rows of np.min / np.max in registers --------------------------------------------------
#
# A call of numpy's loop costs more than a row of a few elements: the loop clears the FP
# status when it returns (fetestexcept and feclearexcept), which took 10 % of GradBench kmeans'
# cost, a np.min of 10 distances per point. A contiguous row of up to Lanes.longest elements
# with no NaN is reduced in registers instead, the way numpy's loop reduces it (its choice
# among equal zeros depends on the lanes of its vectors), and a row with a NaN still goes to
# the loop (its choice among NaN payloads is not modelled). The model is fitted when first
# needed, against numpy's own reductions of rows of every length up to LONGEST, heavy with
# ties of 0.0 and -0.0; where no model fits all of them (another numpy, another machine's
# vectors) every row is one call, as before.

class Lanes(NamedTuple):
    """How numpy's loop reduces a contiguous row
    of at most `longest` elements, NaN-free, into its cell c: `width` lanes start as c; each
    whole group of `width` elements goes into them, lane j = pick(lane j, x_j)
    (pick(x_j, lane j) when value_first); the lanes fold in halves, level k taking
    pick(upper, lower) where upper_first[k], else pick(lower, upper); the rest of the row
    one by one, r = pick(r, x). pick(a, b) is a if a < b (min; > for max), else b: what
    x86's minpd and maxpd return. A width of 1 is the plain scalar loop."""

    width: int
    value_first: bool
    upper_first: tuple
    longest: int


LONGEST = 63  # the longest row (after its first element) a model may cover
SHORT_ROWS = os.environ.get("ADCOMPILE_LLVM_SHORT_ROWS", "1") != "0"
_models = {}  # {(prim, dtype): Lanes or None}, fitted when first asked for


def short_rows(prim, dtype):
    """The Lanes of np.min / np.max (`prim` amin or amax) of `dtype` rows whose loop is in
    use (reduces), or None."""
    if not SHORT_ROWS or not reduces(prim, dtype):
        return None
    with _lock:
        if (prim, dtype) not in _models:
            _models[prim, dtype] = _fit(prim, dtype)
        return _models[prim, dtype]


def _fit(prim, dtype):
    """The first candidate Lanes that gives numpy's bits on every probe row, each length from
    1 to LONGEST; else the longest plain scalar loop that does (None if not even 1)."""
    scalar = _TYPES[dtype][0]
    ufunc = getattr(np, REDUCERS[prim])
    rng = np.random.default_rng(17)
    zeros = rng.choice(np.array([0.0, -0.0], scalar), (128, LONGEST + 4))
    mixed = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 0.5], scalar),
                       (128, LONGEST + 4))
    table = np.concatenate([zeros, mixed]).astype(scalar)
    probes = []
    for n in range(1, LONGEST + 1):  # n + 1 of each row: the cell, then n (at two
        for start in (0, 3):  # alignments: a loop that peeled to align would show)
            rows = table[:, start:start + n + 1]
            probes.append((n, rows, ufunc.reduce(rows, axis=1).tobytes()))
    less = np.less if prim == "amin" else np.greater

    def longest(lanes):
        for n, rows, want in probes:
            if _reduced(lanes, rows, n, less).tobytes() != want:
                return n - 1
        return LONGEST

    item = np.dtype(scalar).itemsize  # the lanes of AVX-512, AVX and SSE vectors first
    widths = [64 // item, 32 // item, 16 // item]
    for width in widths + [w for w in (16, 8, 4, 2) if w not in widths]:
        levels = width.bit_length() - 1
        # the usual: upper half first where the halves are 16 bytes or more (x86's
        # reduce_min/max builtins), lower first inside a 16-byte register
        usual = tuple((width >> (k + 1)) * item >= 16 for k in range(levels))
        orders = [usual] + [o for o in itertools.product((False, True), repeat=levels)
                            if o != usual]
        for value_first in (False, True):
            for upper_first in orders:
                lanes = Lanes(width, value_first, upper_first, LONGEST)
                if longest(lanes) == LONGEST:
                    return lanes
    scalar_loop = longest(Lanes(1, False, (), LONGEST))
    return Lanes(1, False, (), scalar_loop) if scalar_loop > 0 else None


def _reduced(lanes, rows, n, less):
    """The model's reduction of each row (the cell first, then n elements), in numpy."""
    def pick(a, b):
        return np.where(less(a, b), a, b)

    width = lanes.width
    acc = np.repeat(rows[:, :1], width, axis=1)
    whole = n // width
    for k in range(whole):
        group = rows[:, 1 + k * width:1 + (k + 1) * width]
        acc = pick(group, acc) if lanes.value_first else pick(acc, group)
    for upper_first in lanes.upper_first:
        half = acc.shape[1] // 2
        lower, upper = acc[:, :half], acc[:, half:]
        acc = pick(upper, lower) if upper_first else pick(lower, upper)
    r = acc[:, 0]
    for i in range(1 + whole * width, n + 1):
        r = pick(r, rows[:, i])
    return r


def symbols():
    """{symbol: address} of the loops and their data cells, for the linker."""
    found = {}
    for (prim, dtype), (address, cell) in _loops().items():
        found[symbol(prim, dtype)] = address
        found[symbol(prim, dtype) + "_data"] = ctypes.addressof(cell)
    return found


def symbol(prim, dtype):
    return f"adc_ufunc_{prim}_{dtype}"


_LOOP_FN = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, PTR])


class UfuncLowering:
    """Elementwise ops numpy's loops compute (`replaces`), in the kernel's lowering (mixed
    into lower._Lowering)."""

    def ufunc_elementwise(self, op, values):
        """A new array of op's result, each block of BLOCK elements of each row one call of
        the loop; in pieces on the pool when it is long (parallel.py)."""
        b = self.b
        t = op.results[0].type
        (x,) = values  # (never a join: fusion._join_uses keeps them from these ops)
        shape, (strides,) = self.broadcast([x], t.ndim, op.loc)
        out = self.new_array(t.dtype, shape, op.loc)
        if not shape:  # a 0-d array: one row of one element
            shape, strides, out_strides = [i64(1)], [i64(0)], [i64(0)]
        else:
            out_strides = out.strides
        shape, (out_strides, strides) = self.coalesced(shape, [out_strides, strides])
        row = shape[-1]
        blocks = b.sdiv(b.add(row, i64(BLOCK - 1)), i64(BLOCK))
        space = list(shape[:-1]) + [blocks]
        by_block = [s[:-1] + [self.advance(i64(0), i64(BLOCK), s[-1])]
                    for s in (out_strides, strides)]
        starts = [i64(0)] * (len(space) - 1) + [i64(BLOCK)]

        def body(offsets):  # (in a piece, self.b is the piece's builder)
            b = self.b
            at, read_at, start = offsets
            n = self.block_length(b.sub(row, start))
            source, step = self.ufunc_source(x, read_at, strides[-1], n, t.dtype)
            target = b.gep(out.data, [at], source_etype=MEM[t.dtype])
            self.call_ufunc(op.prim, t.dtype, [source, target],
                            [step, b.mul(out_strides[-1], i64(ITEMSIZE[t.dtype]))], n)

        work = b.mul(self.count(shape), i64(WORK))
        self.parallel_loops(space, by_block + [starts], body, work=work)
        return out

    def block_length(self, left):
        """min(left, BLOCK): the elements of the block that starts `left` before a row's end."""
        return self.b.select(self.b.icmp_signed("<", left, i64(BLOCK)), left, i64(BLOCK))

    def ufunc_source(self, x, offset, stride, n, dtype):
        """(pointer, byte step) of n elements of x from `offset` as the loop reads them: x's
        own memory when it holds them in the loop's dtype, else a buffer they are computed
        into (a lazy value's tree, a cast)."""
        b = self.b
        if isinstance(x, ArrayV) and x.dtype == dtype:
            return b.gep(x.data, [offset], source_etype=MEM[dtype]), \
                b.mul(stride, i64(ITEMSIZE[dtype]))
        buffer = self.scratch(ir.ArrayType(MEM[dtype], BLOCK), "block")

        def fill(j):
            value = self.cast_to(self.read(x, self.advance(offset, j, stride)), x.dtype, dtype)
            b.store(value, b.gep(buffer, [j], source_etype=MEM[dtype]))

        self.loop(n, fill)
        return buffer, i64(ITEMSIZE[dtype])

    def call_ufunc(self, prim, dtype, pointers, steps, n):
        """loop(args, dimensions, steps, data) as numpy calls it."""
        b = self.b
        args = self.scratch(ir.ArrayType(PTR, len(pointers)), "ufunc.args")
        step_cells = self.scratch(ir.ArrayType(I64, len(steps)), "ufunc.steps")
        count = self.scratch(I64, "ufunc.n")
        for k, (p, s) in enumerate(zip(pointers, steps)):
            b.store(p, b.gep(args, [i64(k)], source_etype=PTR))
            b.store(s, b.gep(step_cells, [i64(k)], source_etype=I64))
        b.store(n, count)
        name = symbol(prim, dtype)
        data = b.load(external(self.module, name + "_data", PTR), typ=PTR)
        b.call(self.libc(name, _LOOP_FN.return_type, list(_LOOP_FN.args)),
               [args, count, step_cells, data])

    def ufunc_reduce(self, prim, x, base, shape, strides):
        """np.max or np.min (`prim` amax or amin) of the elements of x at base + the index of
        `shape`, as numpy reduces them: the first element into the output cell, then numpy's
        `maximum` (`minimum`) loop over the rest, row by row (C order), reading the cell and
        writing it back (numpy's vectorised reduction for a contiguous row: the ±0 and NaN
        that numpy's own max returns). Returns a register of x's dtype."""
        b = self.b
        dtype = x.dtype
        cell = self.scratch(MEM[dtype], "reduced")
        b.store(self.read(x, base), cell)
        shape, (strides,) = self.coalesced(shape, [strides])
        if not shape:
            return b.load(cell, typ=MEM[dtype])
        first = self.scratch(I64, "first")  # the first row starts after its first element
        b.store(i64(1), first)
        row, step = shape[-1], strides[-1]

        def reduce_row(offsets):
            b = self.b
            skip = b.load(first, typ=I64)
            b.store(i64(0), first)
            start = self.advance(offsets[0], skip, step)
            left = b.sub(row, skip)
            if isinstance(x, ArrayV) and x.dtype == dtype:  # the row in one call

                def call():
                    source, byte_step = self.ufunc_source(x, start, step, left, dtype)
                    self.call_ufunc(prim, dtype, [cell, source, cell],
                                    [i64(0), byte_step, i64(0)], left)

                lanes = short_rows(prim, dtype)
                if lanes is None:
                    call()
                    return
                short = b.and_(b.icmp_signed("<=", left, i64(lanes.longest)),
                               b.icmp_signed("==", step, i64(1)))
                done = self.scratch(I1, "reduced.here")
                b.store(ir.Constant(I1, 0), done)
                with b.if_then(short):
                    b.store(self.short_reduce(prim, lanes, x, start, left, cell), done)
                with b.if_then(b.not_(b.load(done, typ=I1))):
                    call()
                return

            def block(k):  # a lazy value: BLOCK elements at a time through a buffer
                b = self.b
                j = b.mul(k, i64(BLOCK))
                n = self.block_length(b.sub(left, j))
                source, byte_step = self.ufunc_source(x, self.advance(start, j, step), step, n,
                                                      dtype)
                self.call_ufunc(prim, dtype, [cell, source, cell], [i64(0), byte_step, i64(0)],
                                n)

            self.loop(b.sdiv(b.add(left, i64(BLOCK - 1)), i64(BLOCK)), block)

        self.loops(shape[:-1], [strides[:-1]], reduce_row, bases=[base])
        return b.load(cell, typ=MEM[dtype])

    def short_reduce(self, prim, lanes, x, start, n, cell):
        """The n contiguous elements of x from `start` reduced into `cell` in registers, as
        numpy's loop would (short_rows' Lanes), unless the cell or an element is NaN (then
        the cell is left for the loop itself). Returns whether it was reduced (i1)."""
        b = self.b
        t = MEM[x.dtype]
        pred = "<" if prim == "amin" else ">"

        def pick(a, c):
            return b.select(b.fcmp_ordered(pred, a, c), a, c)

        first = b.load(cell, typ=t)
        slots = [self.scratch(t, "lane") for _ in range(lanes.width)]
        for slot in slots:
            b.store(first, slot)
        nan = self.scratch(I1, "nan")
        b.store(b.fcmp_unordered("uno", first, first), nan)

        def element(i):
            value = self.read(x, b.add(start, i))
            b.store(b.or_(b.load(nan, typ=I1),
                          b.fcmp_unordered("uno", value, value)), nan)
            return value

        def group(k):
            at = b.mul(k, i64(lanes.width))
            for j, slot in enumerate(slots):
                value, lane = element(b.add(at, i64(j))), b.load(slot, typ=t)
                b.store(pick(value, lane) if lanes.value_first else pick(lane, value), slot)

        whole = b.sdiv(n, i64(lanes.width))
        self.loop(whole, group)
        values = [b.load(slot, typ=t) for slot in slots]
        for upper_first in lanes.upper_first:
            half = len(values) // 2
            values = [pick(hi, lo) if upper_first else pick(lo, hi)
                      for lo, hi in zip(values[:half], values[half:])]
        result = self.scratch(t, "reduced.short")
        b.store(values[0], result)
        self.loop(n, lambda i: b.store(pick(b.load(result, typ=t), element(i)), result),
                  start=b.mul(whole, i64(lanes.width)))
        clean = b.not_(b.load(nan, typ=I1))
        with b.if_then(clean):
            b.store(b.load(result, typ=t), cell)
        return clean

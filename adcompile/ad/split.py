"""A vjp program split in two: an augmented forward that returns what its reverse sweep needs,
and the reverse sweep as a function of those residuals and the output cotangent.

reverse.vjp_function(fn, active, "split") builds the usual vjp program (primal sweep, then the
adjoint sweep, not fused) and remembers which top-level ops form the forward sweep. `split`
cuts the body there:

- forward(args...) -> (result, (residual_0, residual_1, ...)), the residuals being the
  forward values the reverse sweep reads, in the order the forward sweep defines them;
- reverse(args..., residual_0, ..., out_bar) -> grads (one value, or a tuple), the pullback.

Zero-filled allocations only the reverse sweep uses (shadow arrays) move to the reverse
function, so each reverse call starts from fresh zeros and the residuals stay as the forward
left them. A tape crossing the cut (what a loop's iterations saved) is handed over as arrays,
by the _HANDOVER table: a tape of scalars as one array of its items; a tape of arrays (a state
carried through nonlinear steps, `h = np.tanh(W @ h + x[t])`) as one flat array of all their
elements and a table of (offset, size, shape) rows. The forward pops the tape into them; the
reverse pushes the items (views of the flat array, which it only reads) onto a fresh tape
before its sweep: O(size of the tape) copies, no primal work. In this mode reverse.py
checkpoints no loop (it tapes what a checkpointed loop would run again), so the reverse half
never runs a primal iteration; the adjoint still rebuilds cheap values from taped operands
(exp(x) from a taped x), as every reverse sweep here does. (No tape of tuples is made.)

A tape of *shadow* arrays (reverse.py's ("shadow", value) tapes: arrays a loop writes in
place, a `while` loop carrying an array) is handed over as its layout (_ShadowMemory): the
reverse sweep accumulates into its items, and what makes that right is which items share
memory with which (a row of a top-level shadow, the same array pushed as one iteration's
result and the next one's parameter), so a copy of the items would not do. The forward
half numbers the elements of its shadow allocations and reads where each crossing shadow
array and item lies; the reverse half allocates the memory again, zero-filled, and makes
each of them as the same strided view of it.

The exception, where `split` returns None and callers run the pullback program instead,
which computes the primal again: a reverse half that may write into a residual (it would
spoil a second backward, retain_graph), through any view, loop slot, tape or tuple; with
no loop checkpointed, no program of the test corpora does.
"""

from adcompile.ad.aliases import TapeAliases
from adcompile.ir import types as T
from adcompile.ir.builder import IRBuilder
from adcompile.ir.nodes import VIEWS, WRITES, Block, Function, Op, Value, walk


def split(fn, forward_ids, shadows=frozenset(), shadow_allocs=frozenset()):
    """(forward Function, reverse Function), or None where the cut cannot be made (see the
    module docstring). `shadows`: the forward sweep's shadow arrays and tapes of them;
    `shadow_allocs`: the zero-filled allocations they are made in."""
    body = fn.body
    (pair,) = body.terminator.operands  # tuple(result, tuple(grads)), made by the reverse ops
    result, grads = pair.owner.operands
    forward = [op for op in body.ops[:-1] if id(op) in forward_ids]
    reverse = [op for op in body.ops[:-1] if id(op) not in forward_ids and op is not pair.owner]
    moved = _reverse_only_allocs(forward, reverse)
    forward = [op for op in forward if op not in moved]
    reverse = moved + reverse
    crossing = _crossing(forward, reverse, fn.params)
    tapes = [v for v in crossing if isinstance(v.type, T.Tape) and v not in shadows]
    if any(type(t.type.item) not in _HANDOVER for t in tapes):
        return None
    memory = _ShadowMemory([v for v in crossing if v in shadows])
    if not _made_in(forward, fn.params, memory.values, shadow_allocs):
        return None  # (a shadow in memory no shadow allocation made: none is known)
    forward = memory.arena_tapes() + memory.with_arena_pushes(forward, shadow_allocs)
    b = IRBuilder(Block())
    handed = {t: _HANDOVER[type(t.type.item)][0](b, t) for t in tapes}
    residuals = [r for v in crossing if v not in memory.values for r in handed.get(v, (v,))]
    residuals += memory.pack(b)
    forward += b.block.ops
    reverse_fn = _reverse_function(fn, reverse, grads, residuals, handed, memory)
    if reverse_fn is None:
        return None  # it would write into the residuals: a second backward needs them intact
    return _forward_function(fn, forward, result, residuals), reverse_fn


def _reverse_only_allocs(forward, reverse):
    """Zero-filled allocations in the forward sweep, and views of them, that no other forward
    op reads (a fixed point: a view read only by moved ops moves too)."""
    moved = {op for op in forward if op.prim == "alloc" and op.attrs.get("fill") == 0}
    roots = {r for op in moved for r in op.results}
    for op in forward:
        if op.prim in VIEWS and op.operands[0] in roots:
            moved.add(op)
            roots.update(op.results)
    changed = True
    while changed:
        used = set()
        for op in forward:
            if op not in moved:
                for inner in _ops_of(op):
                    used.update(inner.operands)
        keep = {op for op in moved if any(r in used for r in op.results)}
        changed = bool(keep)
        moved -= keep
    return [op for op in forward if op in moved]


def _ops_of(op):
    yield op
    for region in op.regions:
        yield from walk(region)


def _crossing(forward, reverse, params):
    """Forward values the reverse ops read (inside their regions too), in definition order."""
    defined = {r: k for k, op in enumerate(forward) for r in op.results}
    needed = set()
    for op in reverse:
        for inner in _ops_of(op):
            needed.update(v for v in inner.operands if v in defined)
    return sorted(needed, key=lambda v: (defined[v], v.owner.results.index(v)))


def _forward_function(fn, ops, result, crossing):
    block = Block()
    block.ops = list(ops)
    residuals = Op("tuple", crossing, [T.Tuple(tuple(v.type for v in crossing))])
    pair = Op("tuple", [result, residuals.results[0]],
              [T.Tuple((result.type, residuals.results[0].type))])
    ret = Op("return", [pair.results[0]], [], {"type": pair.results[0].type})
    block.ops += [residuals, pair, ret]
    params = fn.params[:-1]  # (no cotangent)
    return Function(f"{fn.name}_forward", params, block, fn.filename, fn.first_line)


# -- handing the shadow memory over ------------------------------------------------------------

# the digits of an element's place written into shadow memory of each dtype, one pass each:
# (shift, bits), bits None for all that remain; each digit an integer the dtype holds exactly
_DIGITS = {"f64": ((0, None),), "f32": ((0, 16), (16, 16), (32, None))}
_ALIGN = 64  # bytes: each shadow allocation starts as aligned in the rebuilt memory


class _ShadowMemory:
    """The shadow arrays and tapes of shadow arrays that cross the cut (`values`), handed over
    as where they lie, not what they hold (the forward sweep leaves them all zero).

    Every shadow array is a view of one of the forward's zero-filled shadow allocations (the
    arena). The forward half pushes each allocation's memory, as a flat view, on an arena
    tape of its dtype; after its sweep it numbers the elements of all of them one after the
    other (each allocation starting _ALIGN-aligned), writes each element's number into the
    element, and reads, for every crossing shadow array and every item of a crossing shadow
    tape, the numbers at its first element and one step along each axis: its offset and
    strides in that numbering. (A number a dtype cannot hold exactly is written in several
    passes, a digit each.) The residuals are the total size and a table of rows (offset,
    the element one step along each axis, shape) per crossing value. The reverse half
    allocates the numbered memory anew, zero-filled, and makes each value again as the same
    strided view of it (a tape: its items pushed again in order), so arrays share memory
    exactly where the forward's did and each backward starts from fresh zeros: O(size of
    the shadows) work, no primal iteration."""

    def __init__(self, values):
        self.values = values
        self.groups = {}  # dtype -> the crossing values of that dtype
        for v in values:
            self.groups.setdefault(_item(v).dtype, []).append(v)
        self.arena = {dtype: Op("tape_new", [], [T.Tape(T.Array(dtype, 1))],
                                {"item": "object", "item_type": T.Array(dtype, 1)},
                                names=[f"shadow_memory_{dtype}"]).result
                      for dtype in self.groups}
        self.rebuilt = []  # the reverse's new memory (one flat array per dtype)

    def arena_tapes(self):
        return [tape.owner for tape in self.arena.values()]

    def with_arena_pushes(self, ops, allocs):
        """`ops` with each shadow allocation of a crossing dtype followed by the push of its
        memory on the arena tape (inside regions too)."""
        out = []
        for op in ops:
            for region in op.regions:
                region.ops = self.with_arena_pushes(region.ops, allocs)
            out.append(op)
            tape = self.arena.get(op.attrs.get("dtype")) if op in allocs else None
            if tape is not None:
                op.attrs = dict(op.attrs, fill=None)  # (numbered before anything reads it)
                b = IRBuilder(Block())
                b.emit("tape_push", [tape, _flat_view(b, op.results[0])])
                out += b.block.ops
        return out

    def pack(self, b):
        """After the forward sweep: the residual values (per dtype, the size of the memory,
        then a table per crossing value)."""
        self.packed = []
        for dtype, values in self.groups.items():
            self.packed += _number_memory(b, dtype, self.arena[dtype], values)
        return self.packed

    def unpack(self, b, fresh):
        """At the top of the reverse half: {crossing value: the value made again}."""
        rename = {}
        params = iter([fresh[r] for r in self.packed])
        for dtype, values in self.groups.items():
            total = next(params)
            flat = b.value("alloc", [total], {"dtype": dtype, "ndim": 1, "fill": 0},
                           name=f"shadow_memory_{dtype}")
            self.rebuilt.append(flat)
            for v in values:
                rename[v] = _rebuild_shadow(b, flat, next(params), v)
        return rename


def _item(v):
    """A shadow array's type, or the type of a shadow tape's items."""
    return v.type.item if isinstance(v.type, T.Tape) else v.type


def _flat_view(b, array):
    """A fresh allocation's memory as a 1-d array in memory order (it may be in F order)."""
    return b.value("strided", [array, b.const(0), b.value("size", [array]), b.const(1)],
                   {"ndim": 1}, name=f"{array.name or 'a'}_memory")


def _width(item):
    return 1 + 2 * item.ndim  # offset, the element one step along each axis, shape


def _number_memory(b, dtype, arena, values):
    """Number the elements of the arena's allocations and read where `values` lie (see
    _ShadowMemory): [total size, table of each value]."""
    zero, one = b.const(0), b.const(1)
    n = b.value("tape_size", [arena])
    bases = b.value("alloc", [b.value("add", [n, one])], {"dtype": "i64", "ndim": 1,
                                                           "fill": 0}, name="shadow_bases")
    align = b.const(max(1, _ALIGN // T.NUMPY[dtype].itemsize))
    arena = _Traversal(b, arena, last=False)

    def size_of(m, k):
        padded = b.value("mul", [b.value("floordiv", [b.value("add", [
            b.value("size", [m]), b.value("sub", [align, one])]), align]), align])
        b.emit("store", [bases, b.value("add", [k, one]), padded])

    arena.visit(size_of)
    with _counted_loop(b, one, b.value("add", [n, one]), one) as k:
        before = b.value("load", [bases, b.value("sub", [k, one])])
        b.emit("store", [bases, k, b.value("add", [b.value("load", [bases, k]), before])])
    total = b.value("load", [bases, n], name="shadow_size")
    tables = [_new_table(b, v) for v in values]
    items = [_Traversal(b, v, last=False) if isinstance(v.type, T.Tape) else v for v in values]
    digits = _DIGITS[dtype]
    for p, digit in enumerate(digits):
        last = p == len(digits) - 1
        arena.last = last
        arena.visit(lambda m, k: _write_numbers(b, m, b.value("load", [bases, k]), digit,
                                                dtype))
        for v, table, walker in zip(values, tables, items):
            read = lambda x, k, table=table: _read_numbers(b, x, k, table, digit, p == 0)
            if isinstance(walker, _Traversal):
                walker.last = last
                walker.visit(read)
            else:
                read(v, zero)
    return [total] + tables


def _new_table(b, v):
    rows = b.value("tape_size", [v]) if isinstance(v.type, T.Tape) else b.const(1)
    size = b.value("mul", [rows, b.const(_width(_item(v)))])
    return b.value("alloc", [size], {"dtype": "i64", "ndim": 1, "fill": 0},
                   name=f"{v.name or 'shadow'}_where")


class _Traversal:
    """Visits the items of a tape once per call of visit(fn) as fn(item, k), k the item's
    place in push order, popping them onto a second tape (so the next visit can pop them
    again, in the other order) unless the visit is the last."""

    def __init__(self, b, tape, last):
        self.b, self.tape, self.last = b, tape, last
        self.descending = True  # pops come last pushed first

    def visit(self, fn):
        b = self.b
        n = b.value("tape_size", [self.tape])
        other = None if self.last else _new_tape_like(b, self.tape)
        one = b.const(1)
        bounds = (b.value("sub", [n, one]), b.const(-1), b.const(-1)) if self.descending             else (b.const(0), n, one)
        with _counted_loop(b, *bounds) as k:
            item = b.value("tape_pop", [self.tape])
            if other is not None:
                b.emit("tape_push", [other, item])
            fn(item, k)
        self.tape, self.descending = other, not self.descending


def _write_numbers(b, memory, base, digit, dtype):
    """memory[e] = the digit (shift, bits) of base + e, for every element e."""
    shift, bits = digit
    numbers = b.value("arange", [base, b.value("add", [base, b.value("size", [memory])]),
                                 b.const(1)])
    if shift:
        numbers = b.value("floordiv", [numbers, b.const(1 << shift)])
    if bits is not None:
        numbers = b.value("mod", [numbers, b.const(1 << bits)])
    b.emit("assign", [memory, b.cast(numbers, T.Scalar(dtype))])


def _read_numbers(b, x, k, table, digit, first):
    """Add the digit read at x's first element and one step along each axis (where x is not
    empty) into row k of the table; on the first pass, write x's shape there too."""
    item = x.type
    width = _width(item)
    base = b.value("mul", [k, b.const(width)])
    zero, one = b.const(0), b.const(1)
    dims = [b.value("shape", [x], {"axis": a}) for a in range(item.ndim)]
    if first:
        _store_row(b, table, k, b.const(width), dims, 1 + item.ndim)
    places = [[zero] * item.ndim]
    for a, d in enumerate(dims):
        step = b.value("min", [one, b.value("sub", [d, one])])
        places.append([zero] * a + [step] + [zero] * (item.ndim - a - 1))
    nonempty = b.value("min", [b.value("size", [x]), one])
    with _counted_loop(b, zero, nonempty, one):
        for column, index in enumerate(places):
            number = b.cast(b.value("load", [x] + index), T.I64)
            if digit[0]:
                number = b.value("mul", [number, b.const(1 << digit[0])])
            slot = b.value("add", [base, b.const(column)])
            b.emit("store", [table, slot, b.value("add", [b.value("load", [table, slot]),
                                                           number])])


def _rebuild_shadow(b, flat, table, v):
    """Crossing value v made again in `flat` from its table: an array, or a new tape like
    v holding its items in push order."""
    item = _item(v)
    if not isinstance(v.type, T.Tape):
        return _strided_row(b, flat, table, b.const(0), item)
    new = _new_tape_like(b, v)
    zero, one = b.const(0), b.const(1)
    n = b.value("floordiv", [b.value("shape", [table], {"axis": 0}), b.const(_width(item))])
    b.emit("tape_reserve", [new, zero, n, one])
    with _counted_loop(b, zero, n, one) as k:
        b.emit("tape_push", [new, _strided_row(b, flat, table, k, item)])
    return new


def _strided_row(b, flat, table, k, item):
    offset, *row = _row(b, table, k, b.const(_width(item)), _width(item))
    steps, dims = row[: item.ndim], row[item.ndim:]
    strides = [b.value("sub", [s, offset]) for s in steps]
    return b.value("strided", [flat, offset] + dims + strides, {"ndim": item.ndim})


# -- handing a tape over: (pack in the forward -> residual values, unpack in the reverse) ----

def _scalars_to_array(b, tape):
    """The tape's items as a new 1-d array in push order (popped from the top down)."""
    n = b.value("tape_size", [tape])
    array = b.value("alloc", [n], {"dtype": tape.type.item.dtype, "ndim": 1, "fill": None},
                    name=f"{tape.name or 'tape'}_items")
    one = b.const(1)
    with _counted_loop(b, b.value("sub", [n, one]), b.const(-1), b.const(-1)) as k:
        b.emit("store", [array, k, b.value("tape_pop", [tape])])
    return (array,)


def _array_to_scalars(b, residuals, tape):
    """A new tape like `tape` (a forward tape's type and attributes) holding the items of
    the array `residuals[0]`."""
    (array,) = residuals
    new = _new_tape_like(b, tape)
    zero, one = b.const(0), b.const(1)
    n = b.value("shape", [array], {"axis": 0})
    b.emit("tape_reserve", [new, zero, n, one])
    with _counted_loop(b, zero, n, one) as k:
        b.emit("tape_push", [new, b.value("load", [array, k])])
    return new


def _arrays_to_flat(b, tape):
    """A tape of d-d arrays as (flat, table): their elements one after the other in push
    order, and an int64 table of n + 1 rows (offset, size, shape...) of width d + 2. The
    items are popped onto a second tape first (so the second pops come in push order),
    writing their sizes and shapes; a prefix sum gives the offsets; then they are copied."""
    item = tape.type.item
    width = b.const(item.ndim + 2)
    zero, one = b.const(0), b.const(1)
    n = b.value("tape_size", [tape])
    rows = b.value("add", [n, one])
    table = b.value("alloc", [b.value("mul", [rows, width])],
                    {"dtype": "i64", "ndim": 1, "fill": 0}, name=f"{tape.name or 'tape'}_table")
    again = _new_tape_like(b, tape)
    with _counted_loop(b, b.value("sub", [n, one]), b.const(-1), b.const(-1)) as k:
        a = b.value("tape_pop", [tape])
        b.emit("tape_push", [again, a])
        _store_row(b, table, k, width, [b.value("size", [a])] +
                   [b.value("shape", [a], {"axis": j}) for j in range(item.ndim)], 1)
    with _counted_loop(b, one, rows, one) as k:
        before = _row(b, table, b.value("sub", [k, one]), width, 2)
        _store_row(b, table, k, width, [b.value("add", before)], 0)
    (total,) = _row(b, table, n, width, 1)
    flat = b.value("alloc", [total], {"dtype": item.dtype, "ndim": 1, "fill": None},
                   name=f"{tape.name or 'tape'}_items")
    with _counted_loop(b, zero, n, one) as k:
        a = b.value("tape_pop", [again])
        offset, size = _row(b, table, k, width, 2)
        flat_a = a if item.ndim == 1 else b.value("reshape", [a, size])
        b.emit("assign", [_part(b, flat, offset, size), flat_a])
    return flat, table


def _flat_to_arrays(b, residuals, tape):
    """A new tape like `tape` holding views of `flat` shaped by the table's rows (the reverse
    only reads them: a write through a popped item would be one into the residual, and
    `split` gives up)."""
    flat, table = residuals
    item = tape.type.item
    width = b.const(item.ndim + 2)
    zero, one = b.const(0), b.const(1)
    rows = b.value("floordiv", [b.value("shape", [table], {"axis": 0}), width])
    n = b.value("sub", [rows, one])
    new = _new_tape_like(b, tape)
    b.emit("tape_reserve", [new, zero, n, one])
    with _counted_loop(b, zero, n, one) as k:
        offset, size, *dims = _row(b, table, k, width, item.ndim + 2)
        a = _part(b, flat, offset, size)
        a = a if item.ndim == 1 else b.value("reshape", [a] + dims)
        b.emit("tape_push", [new, a])
    return new


_HANDOVER = {T.Scalar: (_scalars_to_array, _array_to_scalars),
             T.Array: (_arrays_to_flat, _flat_to_arrays)}


def _new_tape_like(b, tape):
    return b.emit("tape_new", [], tape.owner.attrs, names=[tape.name],
                  result_types=[tape.type]).result


def _row(b, table, k, width, count):
    """The first `count` entries of row k of a table of rows of `width` entries."""
    base = b.value("mul", [k, width])
    return [b.value("load", [table, b.value("add", [base, b.const(j)])]) for j in range(count)]


def _store_row(b, table, k, width, values, first):
    base = b.value("mul", [k, width])
    for j, v in enumerate(values, first):
        b.emit("store", [table, b.value("add", [base, b.const(j)]), v])


def _part(b, flat, offset, size):
    """flat[offset:offset + size], a view."""
    stop = b.value("add", [offset, size])
    return b.value("slice", [flat, offset, stop], {"index": (("slice", True, True, False),)})


class _counted_loop:
    """`with _counted_loop(b, start, stop, step) as k:` builds a `for` with no carried
    values around the ops emitted in the block."""

    def __init__(self, b, start, stop, step):
        self.b, self.bounds = b, [start, stop, step]
        self.body = Block([Value(T.INT, "k")])

    def __enter__(self):
        self.outer, self.b.block = self.b.block, self.body
        return self.body.params[0]

    def __exit__(self, *exc):
        self.b.emit("yield", [])
        self.b.block = self.outer
        loop = self.b.emit("for", self.bounds, {"result_types": []}, result_types=[])
        loop.regions = [self.body]


def _reverse_function(fn, ops, grads, residuals, handed, memory):
    """The reverse ops with the residuals as new parameters (uses renamed in every region);
    tapes handed over and the shadow memory are made again at the top from their residuals.
    None where the reverse would write into a residual."""
    fresh = {v: Value(v.type, v.name or "residual") for v in residuals}
    b = IRBuilder(Block())
    rename = dict(fresh)
    for tape, parts in handed.items():
        rebuild = _HANDOVER[type(tape.type.item)][1]
        rename[tape] = rebuild(b, [fresh[r] for r in parts], tape)
    rename.update(memory.unpack(b, fresh))
    for op in ops:
        for inner in _ops_of(op):
            inner.operands = [rename.get(v, v) for v in inner.operands]
    ops = b.block.ops + ops
    items = grads.owner.operands if grads.owner is not None and grads.owner.prim == "tuple" \
        else [grads]
    out = items[0] if len(items) == 1 else grads
    block = Block()
    block.ops = list(ops) + [Op("return", [out], [], {"type": out.type})]
    params = fn.params[:-1] + [fresh[v] for v in residuals] + fn.params[-1:]
    reverse_fn = Function(f"{fn.name}_reverse", params, block, fn.filename, fn.first_line)
    sharing = _sharing(reverse_fn)
    written = {sharing.find(op.operands[0]) for op in walk(block) if op.prim in WRITES}
    if any(sharing.find(fresh[v]) in written for v in residuals):
        return None
    _copy_gradients_in(reverse_fn, sharing, memory.rebuilt)
    return reverse_fn


def _made_in(forward, params, values, allocs):
    """Whether the memory of every value in `values` (shadow arrays, tapes of them) can only
    be that of allocations in `allocs`: no other array-making op or parameter shares a
    class with them (aliases.py's classes, joined through every view)."""
    if not values:
        return True
    block = Block()
    block.ops = list(forward)
    sharing = _sharing(Function("forward", list(params), block))
    classes = {sharing.find(v) for v in values}
    if any(sharing.find(p) in classes for p in params):
        return False
    for op in walk(block):
        for r in op.results:
            if sharing.find(r) in classes and _makes_memory(op, r) and op not in allocs:
                return False
    return True


def _makes_memory(op, r):
    """Whether array `r`, a result of `op`, is memory `op` makes (not a view, a slot, a pop
    or an item of another value)."""
    return isinstance(r.type, T.Array) and op.prim not in VIEWS + (
        "for", "while", "if", "tape_pop", "tuple_get")


def _sharing(fn):
    """aliases.py's classes of values that may share memory, joined also through every kind
    of view (reshape, broadcast_to and strided among them) and through tuples."""
    sharing = TapeAliases(fn)
    for op in walk(fn.body):
        if op.operands and op.results and isinstance(op.results[0].type, T.Array) and \
                (op.prim in VIEWS or op.prim == "tuple_get"):
            sharing.union((op.results[0], op.operands[0]))
    return sharing


def _copy_gradients_in(fn, sharing, rebuilt):
    """A gradient in the rebuilt shadow memory (an argument's shadow array) is returned as a
    copy: the caller keeps it, and the memory holds the shadows of every taped iteration."""
    inside = {sharing.find(v) for v in rebuilt}
    ret = fn.body.ops[-1]
    (out,) = ret.operands
    holder = out.owner if out.owner is not None and out.owner.prim == "tuple" else ret
    at = fn.body.ops.index(holder)
    for k, g in enumerate(holder.operands):
        if isinstance(g.type, T.Array) and sharing.find(g) in inside:
            copy = Op("copy", [g], [g.type], names=[g.name])
            fn.body.ops.insert(at, copy)
            at += 1
            holder.operands[k] = copy.results[0]

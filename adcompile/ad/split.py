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

The exception, where `split` returns None and callers run the pullback program instead, which
computes the primal again: a tape of *shadow* arrays (reverse.py's ("shadow", value) tapes:
arrays a loop writes in place, a `while` loop carrying an array). The reverse sweep
accumulates into their items, and what makes it right is which items share memory with which
(a row of a top-level shadow, the same array pushed as one iteration's result and the next
one's parameter); a copy would lose that, and the IR cannot name memory across calls. Also
None, as a guard: a reverse half writing into a residual (it would spoil a second backward,
retain_graph); with no loop checkpointed, no program of the test corpora does.
"""

from adcompile.ir import types as T
from adcompile.ir.builder import IRBuilder
from adcompile.ir.nodes import VIEWS, Block, Function, Op, Value, walk, written_params


def split(fn, forward_ids, shadow_tapes=frozenset()):
    """(forward Function, reverse Function), or None where the cut cannot be made (see the
    module docstring)."""
    body = fn.body
    (pair,) = body.terminator.operands  # tuple(result, tuple(grads)), made by the reverse ops
    result, grads = pair.owner.operands
    forward = [op for op in body.ops[:-1] if id(op) in forward_ids]
    reverse = [op for op in body.ops[:-1] if id(op) not in forward_ids and op is not pair.owner]
    moved = _reverse_only_allocs(forward, reverse)
    forward = [op for op in forward if op not in moved]
    reverse = moved + reverse
    crossing = _crossing(forward, reverse, fn.params)
    tapes = [v for v in crossing if isinstance(v.type, T.Tape)]
    if any(t in shadow_tapes or type(t.type.item) not in _HANDOVER for t in tapes):
        return None  # shadow arrays: the reverse accumulates into them, sharing is the point
    b = IRBuilder(Block())
    handed = {t: _HANDOVER[type(t.type.item)][0](b, t) for t in tapes}
    forward += b.block.ops
    crossing = [r for v in crossing for r in handed.get(v, (v,))]
    reverse_fn = _reverse_function(fn, reverse, grads, crossing, handed)
    n = len(fn.params) - 1
    if any(n <= j < n + len(crossing) for j in written_params(reverse_fn)):
        return None  # it would write into the residuals: a second backward needs them intact
    return _forward_function(fn, forward, result, crossing), reverse_fn


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
    only reads them: a write through a popped item makes written_params see every parameter
    written, and `split` gives up)."""
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


def _reverse_function(fn, ops, grads, crossing, handed):
    """The reverse ops with the residuals as new parameters (uses renamed in every region);
    tapes handed over are made again at the top from their residuals."""
    fresh = {v: Value(v.type, v.name or "residual") for v in crossing}
    b = IRBuilder(Block())
    rename = dict(fresh)
    for tape, residuals in handed.items():
        rebuild = _HANDOVER[type(tape.type.item)][1]
        rename[tape] = rebuild(b, [fresh[r] for r in residuals], tape)
    for op in ops:
        for inner in _ops_of(op):
            inner.operands = [rename.get(v, v) for v in inner.operands]
    ops = b.block.ops + ops
    items = grads.owner.operands if grads.owner is not None and grads.owner.prim == "tuple" \
        else [grads]
    out = items[0] if len(items) == 1 else grads
    block = Block()
    block.ops = list(ops) + [Op("return", [out], [], {"type": out.type})]
    params = fn.params[:-1] + [fresh[v] for v in crossing] + fn.params[-1:]
    return Function(f"{fn.name}_reverse", params, block, fn.filename, fn.first_line)

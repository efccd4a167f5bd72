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
left them. A tape of scalars crossing the cut (values of a loop's iterations) is handed over
as an array: the forward pops it into a new array (`tape_size`, then a counted loop), the
reverse pushes the array into a fresh tape before its sweep (O(pushes) copies, no primal
work). Tapes of arrays or tuples, and a reverse sweep writing into a residual (it would
spoil a second backward, retain_graph), are not split: `split` returns None and callers run
the pullback program instead, which recomputes the primal.
"""

from adcompile.ir import types as T
from adcompile.ir.builder import IRBuilder
from adcompile.ir.nodes import VIEWS, Block, Function, Op, Value, walk, written_params


def split(fn, forward_ids):
    """(forward Function, reverse Function), or None when a tape crosses the cut."""
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
    if not all(isinstance(t.type.item, T.Scalar) for t in tapes):
        return None  # tapes of arrays or tuples stay inside one call
    b = IRBuilder(Block())
    as_array = {t: _tape_to_array(b, t) for t in tapes}
    forward += b.block.ops
    crossing = [as_array.get(v, v) for v in crossing]
    tape_of = {a: t for t, a in as_array.items()}
    reverse_fn = _reverse_function(fn, reverse, grads, crossing, tape_of)
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


def _tape_to_array(b, tape):
    """The tape's items as a new 1-d array in push order (popped from the top down)."""
    n = b.value("tape_size", [tape])
    array = b.value("alloc", [n], {"dtype": tape.type.item.dtype, "ndim": 1, "fill": None},
                    name=f"{tape.name or 'tape'}_items")
    one = b.const(1)
    with _counted_loop(b, b.value("sub", [n, one]), b.const(-1), b.const(-1)) as k:
        b.emit("store", [array, k, b.value("tape_pop", [tape])])
    return array


def _array_to_tape(b, array, tape):
    """A new tape like `tape` (a forward tape's type and attributes) holding array's items."""
    new = b.emit("tape_new", [], tape.owner.attrs, names=[tape.name],
                 result_types=[tape.type]).result
    zero, one = b.const(0), b.const(1)
    n = b.value("shape", [array], {"axis": 0})
    b.emit("tape_reserve", [new, zero, n, one])
    with _counted_loop(b, zero, n, one) as k:
        b.emit("tape_push", [new, b.value("load", [array, k])])
    return new


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


def _reverse_function(fn, ops, grads, crossing, tape_of):
    """The reverse ops with the residuals as new parameters (uses renamed in every region);
    tapes handed over as arrays are made again at the top."""
    fresh = {v: Value(v.type, v.name or "residual") for v in crossing}
    b = IRBuilder(Block())
    rename = dict(fresh)
    for array, tape in tape_of.items():
        rename[tape] = _array_to_tape(b, fresh[array], tape)
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

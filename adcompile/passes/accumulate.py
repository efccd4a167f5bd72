"""Accumulations into shadow arrays kept in carried scalars (scalar replacement, after Carr
and Kennedy's "Scalar replacement in the presence of conditional control flow", 1994).

A reverse-mode loop over `i` adds into a shadow array at a few fixed offsets from `i`
(`x_bar[i] += a; x_bar[i + 1] += b` for Rosenbrock, three offsets for a stencil). Each element
then receives its additions during a window of consecutive iterations and is never touched
again, so the loop can carry the window in scalars: element `i + lo` is stored once, as it
leaves the window, and what is left in the window is stored after the loop. That saves a load
and a store per addition, and what remains is a recurrence that LLVM can vectorise.

The loop qualifies when
- it is a `for` with step 1 or -1 (reversed loops count down) whose lowest index is a
  constant at least -lo (no index wraps around);
- the array is allocated zero-filled (`alloc fill=0`, one dimension) in the same block before
  the loop, and nothing between the allocation and the loop uses it;
- inside the loop, the only uses of the array are `add_at array, i + c, v` at the top level of
  the body, with v of the array's element type and the offsets c forming a contiguous range
  lo..hi (so every element stored after the loop was touched by its last iteration).
Each element starts from the same 0.0 and receives the same additions in the same order
(iteration by iteration, program order within one), so results are the same to the last bit.

Since the loop then stores every element of a known range exactly once, the array is
allocated empty instead of zero-filled, and only the elements outside that range are zeroed
after the loop (all of them if it did not run): one pass over the array's memory fewer.

A loop whose trip i alone adds into elements s*i + k (s >= 2, the offsets k spanning exactly
s: a block per trip, as a Jacobian's values are laid out per observation) is rewritten the same
way without carrying anything from trip to trip (`_block_plan`, below).
"""

from adcompile.ir import types as T
from adcompile.ir.nodes import WRITES, Block, Op, Value, walk, walk_op
from adcompile.ir.nodes import memory_root as _root
from adcompile.ir.prims import PRIMS, may_raise

# the stores index elements the add_ats they replace did, whose indices the primal's loads
# checked (backends may skip the check; indices still wrap as Python's do)
_IN_BOUNDS = {"in_bounds": True}


def accumulate_in_registers(fn):
    _block(fn.body)
    _invariant(fn.body)
    return fn


# -- additions at an index the loop does not change ---------------------------------------------
#
# A reversed loop over r adds into one element of a shadow array on every trip (`xc_bar[c] +=
# l[k, idx] * g` inside `for r`): a chain of additions through memory, a store and a reload
# per trip. When nothing else in the loop touches that array, the element is loaded once before
# the loop (only if the loop runs: an index no trip uses is never read), carried in a scalar,
# and stored once after it. The same additions happen in the same order: the same bits.


def _invariant(block):
    for op in list(block.ops):
        for region in op.regions:
            _invariant(region)
        if op.prim == "for" and _const(op.operands[2]) in (1, -1):
            for add in _invariant_adds(op):
                _carry_element(block, op, add)
            for load in _invariant_loads(op):
                _hoist_load(block, op, load)


def _invariant_loads(loop):
    """The float element loads at the top level of the loop's body at indices defined
    outside it, from arrays the loop does not write (the loop may write only allocated
    arrays: arguments may share memory, new arrays share none), before anything in the body
    that can raise or write. The user's own loads (which can raise) are left alone."""
    body = loop.regions[0]
    inside = {v for o in walk(body) for v in o.results} | \
        {p for o in walk_op(loop) for r in o.regions for p in r.params}
    written = {_root(o.operands[0]) for o in walk(body) if o.prim in WRITES or
               o.prim.startswith("tape")}
    if any(r.owner is None or r.owner.prim != "alloc" for r in written):
        return []
    found = []
    for op in body.ops:
        if op.prim != "load" or not isinstance(op.results[0].type, T.Scalar) or \
                op.results[0].type.dtype not in ("f32", "f64"):
            if op.regions or not PRIMS[op.prim].pure or may_raise(op):
                break  # (an error or a write before the load must come first)
            continue
        array, *index = op.operands
        if may_raise(op):
            break  # (the user's loads stay where they are: the derivative code's only)
        if len(index) == array.type.ndim and _root(array) not in written and \
                not any(v in inside for v in [array] + index):
            found.append(op)
    return found


def _hoist_load(block, loop, load):
    """Read the element once before the loop, when it runs (a load can raise)."""
    element = load.results[0].type
    start, stop = loop.operands[:2]
    ran = Op("lt", [start, stop] if _const(loop.operands[2]) == 1 else [stop, start], [T.BOOL])
    zero = Op("const", [], [element], {"value": 0.0, "type": element})
    body = loop.regions[0]
    body.ops.remove(load)
    first = Op("if", [ran.result], [element], {"result_types": [element]},
               regions=[_block_of([load], [load.results[0]]), _block_of([], [zero.result])],
               names=(load.results[0].name,))
    value = first.results[0]
    for o in walk(body):
        o.operands = [value if v is load.results[0] else v for v in o.operands]
    at = block.ops.index(loop)
    block.ops[at:at] = [ran, zero, first]


def _invariant_adds(loop):
    """The add_at ops at the top level of the loop's body into an allocated array at indices
    defined outside the loop, one per array, when nothing else in the loop uses the array."""
    body = loop.regions[0]
    inside = {v for o in walk(body) for v in o.results} | \
        {p for o in walk_op(loop) for r in o.regions for p in r.params}
    found = {}
    for op in body.ops:
        if op.prim != "add_at" or len(op.operands) < 3:
            continue
        array, *index, value = op.operands
        if array.owner is None or array.owner.prim != "alloc" or array in found or \
                any(v in inside for v in index) or value.type != array.type.element or \
                len(index) != array.type.ndim:
            continue
        found[array] = op
    for o in walk(body):  # the array is used by its one add_at, and no view of it is
        for v in o.operands:
            root = _root(v)
            if root in found and o is not found[root]:
                del found[root]
    return list(found.values())


def _carry_element(block, loop, add):
    """Replace `add` (array[index] += value) by a scalar the loop carries."""
    array, *index, value = add.operands
    element = array.type.element
    body = loop.regions[0]
    start, stop = loop.operands[:2]
    ran = Op("lt", [start, stop] if _const(loop.operands[2]) == 1 else [stop, start], [T.BOOL])
    zero = Op("const", [], [element], {"value": 0.0, "type": element})
    load = Op("load", [array] + index, [element])
    first = Op("if", [ran.result], [element], {"result_types": [element]},
               regions=[_block_of([load], [load.result]), _block_of([], [zero.result])],
               names=(f"{array.name or 'a'}_acc",))
    carried = Value(element, f"{array.name or 'a'}_acc")
    total = Op("add", [carried, value], [element], loc=add.loc,
               names=(f"{array.name or 'a'}_acc",))
    body.ops[body.ops.index(add)] = total
    body.params = list(body.params) + [carried]
    term = body.terminator
    term.operands = list(term.operands) + [total.result]
    loop.operands = list(loop.operands) + [first.results[0]]
    final = Value(element, carried.name, loop)
    loop.results = list(loop.results) + [final]
    loop.attrs["result_types"] = list(loop.attrs.get("result_types", [])) + [element]
    store = Op("store", [array] + index + [final], attrs=_IN_BOUNDS, loc=add.loc)
    last = Op("if", [ran.result], [], {"result_types": []},
              regions=[_block_of([store], []), _block_of([], [])])
    at = block.ops.index(loop)
    block.ops[at:at + 1] = [ran, zero, first, loop, last]


# -- a block of elements per trip ---------------------------------------------------------------
#
# A loop over i adds into elements s*i + k of a fresh shadow array, directly or through a view
# `a_bar[s*i + k0:s*i + k1]` at constant indices, the offsets k spanning exactly s (GradBench
# ba's values: on trip i, the thirty entries of observation i's two Jacobian rows). Each
# element then belongs to one trip, so its additions are carried in a scalar within the trip
# and it is stored once, after its last; an element of the block that nothing adds into
# (there, the x residual's entry for the principal point's y) is stored 0.0. The array is
# allocated empty and only what lies outside the blocks is zeroed, after the loop. Each element
# receives the same additions in the same order from the same 0.0: the same bits.

_PLAIN_SLICE = (("slice", True, True, False),)


def _lowest(loop):
    """The lowest index a step 1 or -1 loop takes, when it is a constant."""
    start, stop, step = (_const(v) for v in loop.operands[:3])
    return start if step == 1 else stop + 1 if step == -1 and isinstance(stop, int) else None


def _block_plan(loop, array):
    """({add_at: offset k}, stride s, lowest k, step) when every use of `array` in the loop's
    body is, at its top level, an add_at at s*i + k or a plain slice from s*i + k0 to s*i + k1
    used only by add_ats at constant indices c >= 0 (element s*i + k0 + c), one s >= 2 for all
    and the offsets k spanning exactly s, none of them negative on the lowest trip."""
    lowest = _lowest(loop)
    if not isinstance(lowest, int):
        return None
    body = loop.regions[0]
    views = {op.results[0]: (op.operands[1], op.operands[2]) for op in body.ops
             if op.prim == "slice" and op.operands[0] is array and
             op.attrs.get("index") == _PLAIN_SLICE}
    bounds = [_affine(v, body.params[0]) for pair in views.values() for v in pair]
    offsets = {op: _element_of(op, array, views, body.params[0]) for op in body.ops
               if op.prim == "add_at" and (op.operands[0] is array or op.operands[0] in views)}
    uses = sum(v is array or v in views for o in walk(body) for v in o.operands)
    found = bounds + list(offsets.values())
    if not offsets or None in found or uses != len(views) + len(offsets) or \
            any(op.operands[-1].type != array.type.element for op in offsets):
        return None
    strides = {s for s, _ in found}
    ks = [k for _, k in offsets.values()]
    stride, lo = max(strides), min(ks)
    if len(strides) != 1 or stride < 2 or max(ks) - lo + 1 != stride or \
            stride * lowest + min(k for _, k in found) < 0:
        return None
    return {op: k for op, (_, k) in offsets.items()}, stride, lo, _const(loop.operands[2])


def _element_of(add, array, views, index):
    """(s, k) when the add_at's element of `array` is s*index + k."""
    if len(add.operands) != 3:
        return None
    target, idx, _ = add.operands
    if target is array:
        return _affine(idx, index)
    c = _const(idx)
    start = _affine(views[target][0], index)
    if not isinstance(c, int) or c < 0 or start is None:
        return None
    return start[0], start[1] + c


def _affine(v, index, depth=8):
    """(s, k) when the int v is s*index + k for constant ints s and k, else None."""
    if v is index:
        return (1, 0)
    c = _const(v)
    if isinstance(c, int):
        return (0, c)
    if depth == 0 or v.owner is None or v.owner.prim not in ("add", "sub", "mul"):
        return None
    a, b = (_affine(x, index, depth - 1) for x in v.owner.operands)
    if a is None or b is None:
        return None
    if v.owner.prim == "add":
        return (a[0] + b[0], a[1] + b[1])
    if v.owner.prim == "sub":
        return (a[0] - b[0], a[1] - b[1])
    if a[0] and b[0]:
        return None
    factor, other = (a[1], b) if not a[0] else (b[1], a)
    return (factor * other[0], factor * other[1])


def _rewrite_blocks(loop, array, offsets, stride, lo, step):
    """Carry each element's additions in a scalar within the trip and store it after its last
    one; store 0.0 at the block's elements nothing adds into. Returns the constant 0.0 that
    goes before the loop and the ops that go after it."""
    element = array.type.element
    body = loop.regions[0]
    zero = Op("const", [], [element], {"value": 0.0, "type": element})
    last = {k: op for op, k in offsets.items()}
    totals, ops = {}, []
    for op in body.ops[:-1]:
        k = offsets.get(op)
        if k is None:
            ops.append(op)
            continue
        target, idx, value = op.operands
        total = Op("add", [totals.get(k, zero.result), value], [element], loc=op.loc,
                   names=(f"{array.name or 'a'}_acc",))
        totals[k] = total.result
        ops.append(total)
        if last[k] is op:
            ops.append(Op("store", [target, idx, total.result], attrs=_IN_BOUNDS, loc=op.loc))
    for k in range(lo, lo + stride):
        if k not in totals:  # between two stored elements of the trip: in bounds
            ops += _store_zero(array, stride, body.params[0], k, zero.result)
    body.ops = ops + [body.terminator]
    start, stop = loop.operands[:2]
    ran = Op("lt", [start, stop] if step == 1 else [stop, start], [T.BOOL])
    covered = ((start, lo), (stop, lo)) if step == 1 else \
        ((stop, stride + lo), (start, stride + lo))
    return zero, [ran] + _zero_the_rest(array, covered, ran, zero.result, scale=stride)


def _store_zero(array, stride, index, k, zero):
    """array[stride * index + k] = zero"""
    s = Op("const", [], [T.INT], {"value": stride, "type": T.INT})
    scaled = Op("mul", [s.result, index], [T.INT])
    c = Op("const", [], [T.INT], {"value": k, "type": T.INT})
    at = Op("add", [scaled.result, c.result], [T.INT])
    return [s, scaled, c, at, Op("store", [array, at.result, zero], attrs=_IN_BOUNDS)]


def _block_of(ops, yielded):
    block = Block()
    block.ops = list(ops) + [Op("yield", list(yielded))]
    return block


def _block(block):
    """One forward pass: `pending` holds the zero-filled 1-d arrays allocated so far in
    `block` that no op since their allocation has used (in allocation order), so a loop's
    candidates are found without rescanning the ops before it."""
    pending = {}  # array -> its allocation's position in the block
    before, after = {}, {}  # loop -> ops to insert before / after it
    for position, op in enumerate(list(block.ops)):
        for region in op.regions:
            _block(region)
        if op.prim == "for" and pending:
            for array in _candidates(op, pending):
                rewritten = _rewrite_for(op, array)
                if rewritten is not None:
                    zero, ops = rewritten
                    before.setdefault(op, []).append(zero)
                    after[op] = ops + after.get(op, [])
        if pending:
            for o in _walk_op(op):
                for v in o.operands:
                    pending.pop(v, None)
        if op.prim == "alloc":
            fill = op.attrs.get("fill")
            if fill == 0 and not isinstance(fill, bool) and op.attrs.get("ndim") == 1:
                pending[op.result] = position
    if before:
        ops = []
        for op in block.ops:
            ops += before.get(op, ())
            ops.append(op)
            ops += after.get(op, ())
        block.ops = ops


def _walk_op(op):
    return walk_op(op) if op.regions else (op,)


def _candidates(loop, pending):
    """The arrays of `pending` (zero-filled, 1-d, allocated before `loop` in its block and
    unused until it) that the top level of the loop's body adds into, in allocation order:
    `_plan` refuses the others."""
    targets = {_root(op.operands[0]) for op in loop.regions[0].ops if op.prim == "add_at"}
    return sorted((a for a in targets if a in pending), key=pending.__getitem__)


def _rewrite_for(loop, array):
    """The window rewrite, else the block rewrite, of `array`'s additions in `loop`: (the
    constant 0.0 that goes before the loop, the ops that go after it), or None."""
    plan = _plan(loop, array)
    if plan is not None:
        return _rewrite(loop, array, *plan)
    plan = _block_plan(loop, array)
    if plan is not None:
        return _rewrite_blocks(loop, array, *plan)
    return None


def _plan(loop, array):
    """(offsets of each add_at by op, lo, hi, step) when every use of `array` in the loop
    qualifies."""
    step = _const(loop.operands[2])
    first = _lowest(loop)
    if not isinstance(first, int):  # the lowest index the loop takes, before the offsets
        return None
    body = loop.regions[0]
    index = body.params[0]
    element = array.type.element
    offsets = {}
    for op in body.ops:
        if op.prim == "add_at" and op.operands[0] is array:
            _, idx, value = op.operands
            c = _offset(idx, index)
            if c is None or value.type != element:
                return None
            offsets[op] = c
    uses = sum(array in o.operands for o in walk(body))
    if not offsets or uses != len(offsets):
        return None
    lo, hi = min(offsets.values()), max(offsets.values())
    if set(offsets.values()) != set(range(lo, hi + 1)) or first + lo < 0:
        return None
    return offsets, lo, hi, step


def _const(v):
    if v.owner is not None and v.owner.prim == "const":
        value = v.owner.attrs["value"]
        return None if isinstance(value, bool) else value
    return None


def _offset(idx, index):
    """c when idx is index + c for a constant int c."""
    if idx is index:
        return 0
    if idx.owner is None or idx.owner.prim not in ("add", "sub"):
        return None
    a, b = idx.owner.operands
    if idx.owner.prim == "add" and b is index:
        a, b = b, a
    c = _const(b)
    if a is not index or not isinstance(c, int):
        return None
    return c if idx.owner.prim == "add" else -c


def _rewrite(loop, array, offsets, lo, hi, step):
    """Window slot j holds element i + edge[j]: slot 0 is stored as it leaves at the end of
    the iteration, the last slot enters at 0.0, the others are carried (as slot j - 1 of the
    next iteration, whose index is i + step). Returns the constant 0.0 that goes before the
    loop and the ops that go after it."""
    element = array.type.element
    edge = [lo + j for j in range(hi - lo + 1)] if step == 1 else \
        [hi - j for j in range(hi - lo + 1)]
    slot = {c: j for j, c in enumerate(edge)}
    body = loop.regions[0]
    zero = Op("const", [], [element], {"value": 0.0, "type": element})
    carried = [Value(element, f"{array.name or 'a'}_{j}") for j in range(len(edge) - 1)]
    window = carried + [zero.result]
    index_of, loc_of = {}, {}
    ops = []
    for op in body.ops[:-1]:
        c = offsets.get(op)
        if c is None:
            ops.append(op)
            continue
        index_of.setdefault(c, op.operands[1])
        loc_of.setdefault(c, op.loc)
        total = Op("add", [window[slot[c]], op.operands[2]], [element], loc=op.loc,
                   names=(f"{array.name or 'a'}_acc",))
        window[slot[c]] = total.result
        ops.append(total)
    ops.append(Op("store", [array, index_of[edge[0]], window[0]], attrs=_IN_BOUNDS,
                  loc=loc_of[edge[0]]))
    term = body.terminator
    term.operands = list(term.operands) + window[1:]
    body.ops = ops + [term]
    body.params = list(body.params) + carried
    loop.operands = list(loop.operands) + [zero.result] * len(carried)
    finals = [Value(element, v.name, loop) for v in carried]
    loop.results = list(loop.results) + finals
    loop.attrs["result_types"] = list(loop.attrs.get("result_types", [])) + \
        [element] * len(carried)
    start, stop = loop.operands[:2]
    ran = Op("lt", [start, stop] if step == 1 else [stop, start], [T.BOOL])
    after = [ran]
    if finals:
        after += _flush(loop, array, finals, edge, step, loc_of, ran)
    start, stop = loop.operands[:2]
    covered = ((start, lo), (stop, hi)) if step == 1 else ((stop, lo + 1), (start, hi + 1))
    after += _zero_the_rest(array, covered, ran, zero.result)
    return zero, after


def _flush(loop, array, finals, edge, step, loc_of, ran):
    """After a loop that ran at least once, the index it would take next is `stop`, and slot
    j holds element stop + edge[j] (its last addition came from offset edge[j] + step)."""
    stop = loop.operands[1]
    then = Block()
    for j, value in enumerate(finals):
        idx = stop
        if edge[j]:
            shift = Op("const", [], [T.INT], {"value": edge[j], "type": T.INT})
            add = Op("add", [stop, shift.result], [T.INT])
            then.ops += [shift, add]
            idx = add.result
        then.ops.append(Op("store", [array, idx, value], attrs=_IN_BOUNDS,
                           loc=loc_of[edge[j] + step]))
    then.ops.append(Op("yield", []))
    other = Block()
    other.ops.append(Op("yield", []))
    return [Op("if", [ran.result], [], {"result_types": []}, regions=[then, other])]


def _zero_the_rest(array, covered, ran, zero, scale=1):
    """The loop stores every element from `scale * v + c` of covered[0] (its first) to the one
    before that of covered[1] exactly once, so the array need not be zero-filled first (a pass
    over memory saved): it is allocated empty and only the elements outside that range are
    zeroed, all of them when the loop did not run."""
    alloc = array.owner
    alloc.attrs = dict(alloc.attrs, fill=None)
    size = alloc.operands[0]
    ops = []

    def emit(prim, *operands, result=T.INT, value=None):
        attrs = {"value": value, "type": T.INT} if prim == "const" else None
        op = Op(prim, list(operands), [result], attrs)
        ops.append(op)
        return op.result

    def element(value, offset):
        if scale != 1:
            value = emit("mul", emit("const", value=scale), value)
        return emit("add", value, emit("const", value=offset))

    first, after_last = (element(*bound) for bound in covered)
    head_end = emit("min", emit("select", ran.result, first, size), size)
    tail_start = emit("max", emit("select", ran.result, after_last, size), head_end)
    ops += _fill(array, emit("const", value=0), head_end, zero)
    ops += _fill(array, tail_start, size, zero)
    return ops


def _fill(array, begin, end, zero):
    """for k in range(begin, end): array[k] = zero"""
    body = Block([Value(T.INT, "k")])
    body.ops = [Op("store", [array, body.params[0], zero], attrs=_IN_BOUNDS), Op("yield", [])]
    one = Op("const", [], [T.INT], {"value": 1, "type": T.INT})
    loop = Op("for", [begin, end, one.result], [], {"result_types": []}, regions=[body])
    return [one, loop]

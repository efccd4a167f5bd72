"""The first addition into a fresh zero-filled array becomes a store (derivative programs).

Reverse mode allocates each shadow array zero-filled and adds every contribution into it
(`x_bar[1:] += a; x_bar[:-1] += b` for vectorised Rosenbrock). When the first thing that
touches the array's memory is `view += v`, with `view` the array itself or a slice of its
first axis without a step, the elements of `view` hold 0 and receive `0 + v`. The pass marks
that addition `fresh`: backends compute `0 + v` without reading the destination (the
addition stays, so -0.0 becomes +0.0 as before: the same bits, and the same errors as an
`iadd`), allocates the array empty and zeroes only what lies outside the view, `a[:start]`
and `a[stop:]` (together with `a[start:stop]` they cover the array whatever the bounds, and
neither overlaps it). The LLVM backend then stores each element once: one pass over the
array's memory (the fill) and one read of the view go away. (The interpreter and the Python
backend zero the view and add, as before.)

It applies when the allocation (of floats) and the addition are at the top level of the same
block and between them the array is used only to make slices of it and to read its shape
(nothing reads its elements, writes them or lets the array escape).
"""

from adcompile.ir import types as T
from adcompile.ir.nodes import Op, walk_op

_WHOLE = ("slice", False, False, False)


def first_store(fn):
    _block(fn.body)
    return fn


def _block(block):
    for op in list(block.ops):
        for region in op.regions:
            _block(region)
    for alloc in [op for op in block.ops if _zero_filled(op)]:
        add = _first_addition(block, alloc)
        if add is not None:
            _store_instead(block, alloc, add)


def _zero_filled(op):
    fill = op.attrs.get("fill") if op.prim == "alloc" else None
    return fill == 0 and not isinstance(fill, bool) and op.results[0].type.is_float


def _first_addition(block, alloc):
    """The `iadd` that first touches the array's memory when it qualifies, else None."""
    array = alloc.result
    views = {array}
    for op in block.ops[block.ops.index(alloc) + 1:]:
        used = [v for o in walk_op(op) for v in o.operands if v in views]
        if not used:
            continue
        if op.prim == "slice" and op.operands[0] in views and len(used) == 1:
            views.add(op.result)
            continue
        if op.prim in ("shape", "size"):
            continue
        if op.prim == "iadd" and op.attrs.get("op", "add") == "add" and used == [op.operands[0]]:
            return op if _covers(op.operands[0], array) else None
        return None
    return None


def _covers(view, array):
    """The array itself, or a slice of its first axis without a step."""
    if view is array:
        return True
    owner = view.owner
    if owner.prim != "slice" or owner.operands[0] is not array:
        return False
    first, *rest = owner.attrs["index"]
    return first[0] == "slice" and not first[3] and all(item == _WHOLE for item in rest)


def _store_instead(block, alloc, add):
    """alloc empty; zero a[:start] and a[stop:]; the addition marked `fresh`."""
    array = alloc.result
    alloc.attrs = dict(alloc.attrs, fill=None)
    add.attrs = dict(add.attrs, fresh=True)
    view = add.operands[0]
    if view is array:
        return
    zero = Op("const", [], [T.FLOAT], {"value": 0.0, "type": T.FLOAT})
    parts = [zero]
    _, has_start, has_stop, _ = view.owner.attrs["index"][0]
    bounds = list(view.owner.operands[1:])
    if has_start:
        parts.append(_slice(array, ("slice", False, True, False), bounds.pop(0)))
    if has_stop:
        parts.append(_slice(array, ("slice", True, False, False), bounds.pop(0)))
    # the zero fills go right after the addition, which may join the stores before it, and
    # the fills may join it and the stores after them (an LLVM store group: x_bar[1:] = a,
    # x_bar[:1] = 0, x_bar[:-1] += b is one pass); so the slices they fill are made where the
    # addition's view is, not between the stores
    fills = [Op("assign", [part.result, zero.result]) for part in parts[1:]]
    at = block.ops.index(add) + 1
    block.ops[at:at] = fills
    at = block.ops.index(view.owner) + 1
    block.ops[at:at] = parts


def _slice(array, item, bound):
    return Op("slice", [array, bound], [array.type], {"index": (item,)})

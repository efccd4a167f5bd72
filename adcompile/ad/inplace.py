"""In-place array updates whose derivative needs the array's old value, as the derivative
transforms see them: the new value stored back.

`x += v` and `x -= v` change x's derivative by v's alone, and `x *= c`, `x /= c` by a
constant (or any value without a derivative) scale it in place; both transforms handle those
as they are. Every other in-place update of a float array (`x *= y` and `x /= y` for a
differentiated y, `x **= p`, `x //= y`, `x %= y`) has a derivative that reads x as it was
before the update, which the update overwrites. For the transforms such an `iadd` op becomes
`t = op(x, v); x[...] = t`: the elementwise op has its own rule (reverse mode keeps what it
reads, as for any array written later) and the store is an ordinary assignment. numpy's
in-place update computes the same values, and numpy's casting rule was checked when the
program was read (frontend/arrays.augment_in_place), so the program computes what it did.
The primal program keeps its in-place update; the rewrite is made on a copy of the IR.
"""

from adcompile.ir import serialize
from adcompile.ir import types as T
from adcompile.ir.nodes import Op, walk
from adcompile.ir.prims import PRIMS

KEPT = ("add", "sub")  # updates both transforms differentiate in place
SCALED = ("mul", "div")  # ... and these, by a value without a derivative


def needs_old_value(op, active):
    """Whether `op` is an in-place update of a float array whose derivative needs the array's
    value before it (`active`: the values that carry a derivative)."""
    if op.prim != "iadd":
        return False
    dst, value = op.operands
    kind = op.attrs.get("op", "add")
    if kind in KEPT or not _float_array(dst.type):
        return False
    return kind not in SCALED or value in active


def assign_form(fn, rewritten):
    """A copy of `fn` in which each op whose position in walk order is in `rewritten` (a
    set) is `t = op(x, v); x[...] = t`; `fn` itself when the set is empty, or None when fn
    cannot be copied (then the transform refuses the update as before)."""
    if not rewritten:
        return fn
    data = serialize.encode(fn)
    if data is None:
        return None
    copy = serialize.decode(data)
    blocks = {}
    _index_blocks(copy.body, blocks)
    for k, op in enumerate(list(walk(copy.body))):
        if k in rewritten:
            _rewrite(op, blocks[id(op)])
    return copy


def positions(fn, predicate):
    """The walk-order positions of fn's ops for which predicate(op) holds."""
    return {k for k, op in enumerate(walk(fn.body)) if predicate(op)}


def _index_blocks(block, blocks):
    for op in block.ops:
        blocks[id(op)] = block
        for region in op.regions:
            _index_blocks(region, blocks)


def _rewrite(op, block):
    dst, value = op.operands
    kind = op.attrs["op"]
    (result_type,) = PRIMS[kind].type_rule([dst.type, value.type], {})
    new = Op(kind, [dst, value], [result_type], loc=op.loc)
    store = Op("assign", [dst, new.results[0]], [], loc=op.loc)
    at = block.ops.index(op)
    block.ops[at:at + 1] = [new, store]


def _float_array(t):
    return isinstance(t, T.Array) and t.dtype in ("f32", "f64")

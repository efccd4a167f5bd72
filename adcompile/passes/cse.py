"""Common subexpression elimination: a pure op identical to one that dominates it (same
primitive, operands and attributes, except attributes that only drop a check: the earlier
op stands for a later one unless that would lose the later one's check) is replaced by the
earlier op's result.

Loads can see stores, so a load is merged only when it reads an array parameter and the
function stores into no parameter (one parameter may be a view of another, so a store into any
of them could change what a load reads). The reverse pass recomputes from reloaded elements,
and this is what folds those reloads back into the forward pass's own.

Whole-array ops read memory too, and make new arrays: they are merged only in functions that
write no array at all. Views (slice, transpose) are always merged: two views of the same
memory with the same index see the same elements, written or not."""

from adcompile.ir import types as T
from adcompile.ir.nodes import walk, written_params
from adcompile.ir.prims import PRIMS

_NEVER = {"alloc", "tuple"}  # allocations are distinct objects


_WRITES = {"store", "add_at", "assign", "iadd", "scatter_add", "mask_add"}
_VIEWS = {"slice", "transpose", "shape", "size"}


def common_subexpressions(fn):
    replace = {}
    readonly = set() if written_params(fn) else set(fn.params)
    arrays_frozen = not any(op.prim in _WRITES for op in walk(fn.body))
    _block(fn.body, {}, replace, readonly, arrays_frozen)
    return fn


def _block(block, seen, replace, readonly, arrays_frozen):
    """`seen` holds the keys of the ops that dominate this point; the keys this block adds
    are removed again when it ends (a scoped table: no copy per region)."""
    added = []
    for op in block.ops:
        op.operands = [replace.get(v, v) for v in op.operands]
        for region in op.regions:
            _block(region, seen, replace, readonly, arrays_frozen)
        prim = PRIMS[op.prim]
        if op.prim == "load":
            if op.operands[0] not in readonly:
                continue
        elif not prim.pure or op.prim in _NEVER or op.regions or len(op.results) != 1:
            continue
        elif not arrays_frozen and op.prim not in _VIEWS and (
                isinstance(op.result.type, T.Array) or
                any(isinstance(v.type, T.Array) for v in op.operands)):
            continue
        key = (op.prim, tuple(op.operands), _freeze(op.attrs), op.result.type)
        earlier = seen.get(key)
        if earlier is not None:
            if not _drops_a_check(earlier.owner, op):
                replace[op.result] = earlier
        else:
            seen[key] = op.result
            added.append(key)
    for key in added:
        del seen[key]


# attributes that only say a check is not needed (the derivative code's loads at indices the
# primal checked, its integer arithmetic recomputing what the primal computed): an op with
# them and one without are the same expression, and the checked one may stand for both
_RELAXING = ("in_bounds", "wraps")


def _drops_a_check(earlier, op):
    """Whether replacing `op` by `earlier` would lose a check `op` makes."""
    return any(earlier.attrs.get(a) and not op.attrs.get(a) for a in _RELAXING)


def _freeze(attrs):
    if not attrs:
        return ()
    return tuple(sorted((k, repr(v)) for k, v in attrs.items() if k not in _RELAXING))

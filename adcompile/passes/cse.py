"""Common subexpression elimination: a pure op identical to one that dominates it (same
primitive, operands and attributes, except attributes that only drop a check: the earlier
op stands for a later one unless that would lose the later one's check) is replaced by the
earlier op's result.

Loads can see stores, so a load is merged only when it reads an array parameter, or a view
of one (a row, a slice: `memory_root`), and the function stores into no parameter (one
parameter may be a view of another, so a store into any of them could change what a load
reads). The reverse pass recomputes from reloaded elements, and this is what folds those
reloads back into the forward pass's own, and then what it computes from them (in GradBench
ba's gradient, whose projection reads the rows `cams[obs[i, 0]]`, the rotation's square root
and divisions: 38 divisions per observation went to 18).

Whole-array ops read memory too, and make new arrays: they are merged only in functions that
write no array at all. Views (slice, transpose) are always merged: two views of the same
memory with the same index see the same elements, written or not."""

import math

from adcompile.ir import types as T
from adcompile.ir.nodes import export_from_if, memory_root, walk, written_params
from adcompile.ir.prims import PRIMS

_NEVER = {"alloc", "tuple"}  # allocations are distinct objects


_WRITES = {"store", "add_at", "assign", "iadd", "scatter_add", "mask_add"}
_VIEWS = {"slice", "transpose", "shape", "size"}


def common_subexpressions(fn):
    replace = {}
    readonly = set() if written_params(fn) else set(fn.params)
    arrays_frozen = not any(op.prim in _WRITES for op in walk(fn.body))
    _Scope(replace, readonly, arrays_frozen).block(fn.body, [])
    return fn


class _Scope:
    """`seen` holds the keys of the ops that dominate this point; the keys a block adds are
    removed again when it ends (a scoped table: no copy per region); `ifs` likewise holds the
    dominating `if` op of each condition."""

    def __init__(self, replace, readonly, arrays_frozen):
        self.replace, self.readonly, self.arrays_frozen = replace, readonly, arrays_frozen
        self.seen, self.ifs = {}, {}
        self.local_of = {}  # a result an earlier `if` exports -> the value it yields

    def block(self, block, offers):
        added, added_ifs = [], []
        for op in block.ops:
            op.operands = [self.replace.get(v, v) for v in op.operands]
            earlier = self.ifs.get(op.operands[0]) if op.prim == "if" else None
            for k, region in enumerate(op.regions):
                inner = offers + [_Offer(earlier, k, self)] if earlier is not None else offers
                self.block(region, inner)
            if op.prim == "if" and earlier is None:
                self.ifs[op.operands[0]] = op
                added_ifs.append(op.operands[0])
            key = self.key(op)
            if key is None:
                continue
            found = self.seen.get(key)
            if found is None:
                found = self.offered(op, offers)
                if found is None:
                    self.seen[key] = op.result
                    added.append(key)
                    continue
            if not _drops_a_check(found.owner, op):
                self.replace[op.result] = found
        for key in added:
            del self.seen[key]
        for cond in added_ifs:
            del self.ifs[cond]

    def key(self, op, operands=None):
        """The op's key, or None when it is not merged."""
        prim = PRIMS[op.prim]
        if op.prim == "load":
            if memory_root(op.operands[0]) not in self.readonly:
                return None
        elif not prim.pure or op.prim in _NEVER or op.regions or len(op.results) != 1:
            return None
        elif not self.arrays_frozen and op.prim not in _VIEWS and (
                isinstance(op.result.type, T.Array) or
                any(isinstance(v.type, T.Array) for v in op.operands)):
            return None
        return (op.prim, tuple(op.operands if operands is None else operands),
                _freeze(op.attrs), op.result.type)

    def offered(self, op, offers):
        """A result an earlier `if` on this `if`'s condition exports for `op`: the value the
        same branch of that `if` computed (it ran when this branch runs)."""
        if not isinstance(op.result.type, T.Scalar):
            return None
        operands = [self.local_of.get(v, v) for v in op.operands]
        key = self.key(op, operands)
        for offer in reversed(offers):
            local = offer.table.get(key)
            if local is not None and not _drops_a_check(local.owner, op):
                result = offer.export(local)
                self.local_of[result] = local
                return result
        return None


class _Offer:
    """The scalar values computed at the top level of branch `k` of the `if` op `earlier`, by
    key: a later `if` on the same condition takes what its same branch would compute again
    from them, as new results of `earlier` (the other branch yields a zero no one reads).
    The reverse pass's recomputation under a tested condition (GradBench ba's rotation under
    `theta2 != 0`: its square root and three divisions) then reuses the forward pass's."""

    def __init__(self, earlier, k, scope):
        self.earlier, self.k, self.exported = earlier, k, {}
        self.table = {}
        for op in earlier.regions[k].ops[:-1]:
            if op.results and isinstance(op.results[0].type, T.Scalar):
                key = scope.key(op)
                if key is not None:
                    self.table.setdefault(key, op.result)

    def export(self, local):
        result = self.exported.get(local)
        if result is None:
            result = self.exported[local] = export_from_if(self.earlier, self.k, local)
        return result


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
    return tuple(sorted((k, _frozen(v)) for k, v in attrs.items() if k not in _RELAXING))


def _frozen(value):
    """An attribute's value as a key: its repr, which tells -0.0 from 0.0 but not a NaN with
    its sign bit set (inf - inf on x86) from one without."""
    if isinstance(value, float) and value != value:
        return f"nan{math.copysign(1.0, value):+.0f}"
    if type(value) is int:  # (itself: repr refuses an int of more than 4300 digits)
        return value
    return repr(value)

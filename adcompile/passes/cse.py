"""Common subexpression elimination: a pure op identical to one that dominates it (same
primitive, operands and attributes) is replaced by the earlier op's result."""

from adcompile.ir.prims import PRIMS

_NEVER = {"load", "alloc", "tuple"}  # loads can see stores; allocations are distinct


def common_subexpressions(fn):
    replace = {}
    _block(fn.body, {}, replace)
    return fn


def _block(block, seen, replace):
    seen = dict(seen)
    for op in block.ops:
        op.operands = [replace.get(v, v) for v in op.operands]
        for region in op.regions:
            _block(region, seen, replace)
        prim = PRIMS[op.prim]
        if not prim.pure or op.prim in _NEVER or op.regions or len(op.results) != 1:
            continue
        key = (op.prim, tuple(op.operands), _freeze(op.attrs), op.result.type)
        earlier = seen.get(key)
        if earlier is not None:
            replace[op.result] = earlier
        else:
            seen[key] = op.result


def _freeze(attrs):
    return tuple(sorted((k, repr(v)) for k, v in attrs.items()))

"""Tuples merged by control flow are split into their items: an `if` that yields a tuple from
each branch (a function returning a tuple from several places), or a loop carrying one, yields
or carries the items instead, and the tuple is built again where it is used.

Each tuple-typed position of an if/for/while (a result, the loop's initial value, the region
parameters and what the regions yield into it) becomes one position per item: the values
flowing in are taken apart with `tuple_get` next to where they flow (folded away by the
`fold` pass when they were just built by `tuple`), and the parameters and results are put
back together with `tuple` at the start of their block and after the op. Nested tuples split
one level per round. So reverse mode, whose adjoints of merges are per scalar or array, meets
no merged tuple (ad/reverse.py refuses one, located, should any remain).
"""

from adcompile.ir import types as T
from adcompile.ir.nodes import Op, Value, walk

# where each control op's carried values stand: its operands from this index; per region, its
# parameters and its terminator's operands from these indices
_LAYOUT = {"if": (None, ((None, 0), (None, 0))), "for": (3, ((1, 0),)),
           "while": (0, ((0, 1), (0, 0)))}


def split_tuples(fn):
    while True:
        found = _first_merged_tuple(fn.body)
        if found is None:
            return fn
        block, op = found
        _split(fn, block, op)


def _first_merged_tuple(block):
    for op in block.ops:
        if op.prim in _LAYOUT and any(isinstance(r.type, T.Tuple) for r in op.results):
            return block, op
        for region in op.regions:
            found = _first_merged_tuple(region)
            if found is not None:
                return found
    return None


def _split(fn, block, op):
    positions = [k for k, r in enumerate(op.results) if isinstance(r.type, T.Tuple)]
    replace = {}
    start, regions = _LAYOUT[op.prim]
    if start is not None:
        op.operands = _taken_apart(op.operands, start, positions, block, op)
    for region, (params_at, yields_at) in zip(op.regions, regions):
        if params_at is not None:
            region.params = _rebuilt(region.params, params_at, positions, region, 0, replace)
        term = region.terminator
        term.operands = _taken_apart(term.operands, yields_at, positions, region, term)
    results = _rebuilt(op.results, 0, positions, block, block.ops.index(op) + 1, replace)
    for r in results:
        r.owner = op
    op.results = results
    for o in walk(fn.body):
        o.operands = [replace.get(v, v) for v in o.operands]


def _taken_apart(values, start, positions, block, before):
    """`values` with each tuple at start + a position replaced by its items (tuple_get ops
    inserted in `block` before `before`)."""
    out = list(values[:start])
    for k, v in enumerate(values[start:]):
        if k not in positions:
            out.append(v)
            continue
        for i, t in enumerate(v.type.items):
            get = Op("tuple_get", [v], [t], {"index": i}, loc=before.loc)
            block.ops.insert(block.ops.index(before), get)
            out.append(get.result)
    return out


def _rebuilt(values, start, positions, block, at, replace):
    """`values` (definitions: parameters or results) with each tuple at start + a position
    replaced by one new value per item, and a `tuple` op of them inserted in `block` at
    index `at`, which stands for the old value from there on (`replace`)."""
    out = list(values[:start])
    for k, v in enumerate(values[start:]):
        if k not in positions:
            out.append(v)
            continue
        items = [Value(t, f"{v.name}.{i}" if v.name else None)
                 for i, t in enumerate(v.type.items)]
        rebuilt = Op("tuple", items, [v.type], names=[v.name])
        block.ops.insert(at, rebuilt)
        at += 1
        replace[v] = rebuilt.result
        out.extend(items)
    return out

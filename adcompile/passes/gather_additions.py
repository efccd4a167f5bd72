"""Additions into a fresh array gathered into one store (derivative programs).

Reverse mode adds each contribution to a shadow array as it is made: GradBench ode's state
adjoint is `y_bar = 0 + g` (first_store's `fresh` addition), then `y_bar += t1_bar`,
`y_bar += t2_bar`, `y_bar += t3_bar`, one per RK4 stage, each a pass over the array's
memory that reads what the last one wrote. When nothing in between touches the array, the
additions become one `fresh` addition, at the place of the last, of `((g + t1_bar) + t2_bar)
+ t3_bar`: the same additions in the same order, one pass, no array read back. (The bits are
the same: 0 + a + b is (0 + a) + b with the -0.0 of 0 + -0.0 made +0.0 either way.)

A run qualifies when it starts at an `iadd array, v {fresh}` into the whole of an array
allocated in the same block, is followed there by `iadd array, w` (adding, of the array's
own type), and between its first and last addition
- no op uses the array or a view of it, but those additions;
- no op writes memory that one of the added values may share (each value is read where the
  last addition stands now): only arrays some other new-buffer op made are known apart
  (ir/origins.py).
"""

from adcompile.ir import types as T
from adcompile.ir.nodes import WRITES, Op, memory_root, walk_op
from adcompile.ir.origins import Origins


def gather_additions(fn):
    origins = Origins(fn)
    _block(fn.body, origins)
    return fn


def _block(block, origins):
    for op in list(block.ops):
        for region in op.regions:
            _block(region, origins)
    for first in [op for op in block.ops if _starts(op, block)]:
        run = _run(block, first, origins)
        if len(run) > 1:
            _gather(block, run)


def _starts(op, block):
    if op.prim != "iadd" or not op.attrs.get("fresh"):
        return False
    array = op.operands[0]
    return array.owner is not None and array.owner.prim == "alloc" and \
        array.owner in block.ops and _adds_own_type(op, array)


def _adds_own_type(op, array):
    return op.attrs.get("op", "add") == "add" and op.operands[1].type == array.type and \
        isinstance(array.type, T.Array) and array.type.is_float


def _run(block, first, origins):
    """The additions into first's array that can be gathered with it, in order."""
    array = first.operands[0]
    run = [first]
    for op in block.ops[block.ops.index(first) + 1:]:
        if op.prim == "iadd" and op.operands[0] is array and not op.attrs.get("fresh") and \
                _adds_own_type(op, array) and memory_root(op.operands[1]) is not array:
            run.append(op)
            continue
        if _touches(op, array) or _overwrites(op, run, origins):
            break
    return run


def _touches(op, array):
    return any(memory_root(v) is array for o in walk_op(op) for v in o.operands)


def _overwrites(op, run, origins):
    """Whether op may write memory that a value added so far shares."""
    for o in walk_op(op):
        if o.prim in WRITES:
            dst = o.operands[0]
            if any(not origins.distinct(dst, a.operands[1]) for a in run):
                return True
    return False


def _gather(block, run):
    """One `fresh` addition of the values' sum, left to right, where the last one stood."""
    last = run[-1]
    total, ops = run[0].operands[1], []
    for add in run[1:]:
        total_op = Op("add", [total, add.operands[1]], [add.operands[1].type], loc=add.loc,
                      names=(run[0].operands[0].name,))
        ops.append(total_op)
        total = total_op.result
    store = Op("iadd", [run[0].operands[0], total], attrs=dict(run[0].attrs), loc=last.loc)
    at = block.ops.index(last)
    block.ops[at:at + 1] = ops + [store]
    for add in run[:-1]:
        block.ops.remove(add)

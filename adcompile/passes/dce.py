"""Dead code elimination: pure ops whose results are never used are removed, and so are
if/for/while ops whose results are unused when nothing inside them has an effect (a grad
program's forward loop that only computed the value grad() does not return)."""

from adcompile.ir.nodes import walk
from adcompile.ir.prims import PRIMS


def dead_code(fn):
    changed = True
    while changed:
        used = {v for op in walk(fn.body) for v in op.operands}
        changed = _sweep(fn.body, used)
    return fn


def _sweep(block, used):
    kept, changed = [], False
    for op in block.ops:
        for region in op.regions:
            changed |= _sweep(region, used)
        if not any(r in used for r in op.results) and (
                (PRIMS[op.prim].pure and op.results) or
                (op.regions and not any(_effect(o) for r in op.regions for o in walk(r)))):
            changed = True
            continue
        kept.append(op)
    block.ops = kept
    return changed


_CONTROL = ("if", "for", "while", "yield", "condition")


def _effect(op):
    return not PRIMS[op.prim].pure and op.prim not in _CONTROL

"""Dead code elimination: pure ops whose results are never used are removed."""

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
        if PRIMS[op.prim].pure and op.results and not any(r in used for r in op.results):
            changed = True
            continue
        kept.append(op)
    block.ops = kept
    return changed

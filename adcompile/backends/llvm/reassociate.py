"""Rewrites of the IR that fastmath=True allows and strict IEEE does not (LLVM backend).

They change the order of floating-point operations, so NativeFunction applies them only with
fastmath=True, and to a copy of the function: the IR that the front end and the derivative
transforms make (cached on disk, differentiated again, shown by `ir()`) stays as written,
and fastmath=False compiles it unchanged, to the same bits as before.

- A matrix product summed over its rows: `sum_to(Y @ W, like)`, with `like` of at most one
  dimension, is `sum_to(sum(Y, axis=0) @ W, like)`: a vector times the matrix instead of a
  matrix product and a pass over its m x n result. Reverse mode makes the first form from
  every row broadcast ahead of a product: in `(x - mu) @ W.T`, mu's adjoint is
  `-(Y_bar @ W)` summed over rows (GradBench's gmm, one product in three of its gradient).
  Elementwise ops linear in the product (negation, multiplication or division by a number)
  may stand between it and the sum; each value of the chain must have no other use.
"""

from adcompile.ir import serialize
from adcompile.ir import types as T
from adcompile.ir.nodes import Op, walk
from adcompile.ir.prims import PRIMS

# elementwise ops linear in one array operand, the others numbers: (prim, operand positions
# the array may take)
_LINEAR = {"neg": (0,), "mul": (0, 1), "div": (0,)}


def rewritten(fn):
    """`fn` itself when no rewrite applies (or it cannot be copied), else a rewritten copy."""
    if not _sites(fn):
        return fn
    data = serialize.encode(fn)
    if data is None:
        return fn
    copy = serialize.decode(data)
    blocks = _blocks_of(copy)
    for product, chain in _sites(copy):
        _sum_rows_first(product, chain, blocks)
    return copy


def _sites(fn):
    """(matmul op, the linear ops from its result to the sum_to) of every sum over rows of
    a matrix product that is used for nothing else."""
    uses = _use_counts(fn)
    sites = []
    for op in walk(fn.body):
        if op.prim != "sum_to" or not _at_most_vector(op.operands[1].type):
            continue
        chain = []
        v = op.operands[0]
        while v.owner is not None and uses.get(v) == 1 and _linear_in(v.owner):
            chain.append(v.owner)
            v = _array_operand(v.owner)
        if v.owner is not None and v.owner.prim == "matmul" and uses.get(v) == 1 and \
                _matrices(v.owner):
            sites.append((v.owner, chain[::-1]))
    return sites


def _use_counts(fn):
    uses = {}
    for op in walk(fn.body):
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
    return uses


def _at_most_vector(t):
    return not isinstance(t, T.Array) or t.ndim <= 1


def _linear_in(op):
    """Whether `op` is elementwise and linear in its one float array operand."""
    places = _LINEAR.get(op.prim)
    if places is None:
        return False
    arrays = [n for n, v in enumerate(op.operands) if isinstance(v.type, T.Array)]
    return len(arrays) == 1 and arrays[0] in places and op.operands[arrays[0]].type.is_float


def _array_operand(op):
    return next(v for v in op.operands if isinstance(v.type, T.Array))


def _matrices(product):
    """A float matrix times a float matrix of the result's dtype (no batches, no vectors)."""
    y, w = product.operands
    t = product.result.type
    return all(isinstance(v.type, T.Array) and v.type.ndim == 2 and v.type.dtype == t.dtype
               for v in (y, w)) and t.is_float


def _blocks_of(fn):
    """op -> the block that holds it."""
    blocks = [fn.body] + [region for op in walk(fn.body) for region in op.regions]
    return {op: block for block in blocks for op in block.ops}


def _sum_rows_first(product, chain, blocks):
    """Y @ W -> sum(Y, axis=0) @ W where it stands; the chain's results become vectors."""
    block = blocks[product]
    y = product.operands[0]
    rows = Op("sum", [y], [T.Array(y.type.dtype, 1)], {"axis": (0,), "keepdims": False},
              loc=product.loc)
    block.ops.insert(block.ops.index(product), rows)
    product.operands[0] = rows.result
    for op in [product, *chain]:
        (result_type,) = PRIMS[op.prim].type_rule([v.type for v in op.operands], op.attrs)
        op.result.type = result_type

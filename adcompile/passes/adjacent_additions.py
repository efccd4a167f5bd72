"""Additions into one array brought next to each other (derivative programs).

Reverse mode adds each contribution to a shadow as the adjoint statement that makes it comes
up: GradBench ode's step adds into `x_bar[1:]` once per RK4 stage, with the stages' other
adjoint work in between (`x_bar[1:] += a1; t_bar[:-1] = b1; ... x_bar[1:] += a2; ...`).
Each addition is then a loop of its own that reads and writes the whole destination. When
nothing between two additions into the same view touches its memory, the earlier one moves
down to stand just before the later: `x_bar[1:] += a1; x_bar[1:] += a2` run one after the
other, which the LLVM backend makes one loop (fusion.py's store groups: each element gets
`(x + a1) + a2`, loaded once and stored once). Nothing is added in another order, so every
backend gives the bits it gave before.

An addition `iadd view, value` moves past the ops between it and the next addition into the
same view (the same IR value) when
- the view is memory of a new array the function made (an error part-way through leaves
  nothing the caller sees in another state);
- no op between uses an array that may share the view's memory, other than views of its
  shape (`shape`, a new view); `x[:s]` and `x[s:]` of one array and one `s` are apart;
- no op between writes memory that one of the values moved past it may share (each value
  is read where its addition now stands): only arrays known apart count (ir/origins.py:
  made by different new-buffer ops, a shadow and a value of one reverse mode; a new buffer
  and an argument);
- no op between has regions (a branch or loop) or takes a tuple;
- when a moved addition may raise (a value of another shape: the user's code; reverse
  mode's additions do not), no op between may raise or write memory the caller sees: the
  error and what the caller finds written stay those of the program as written.
"""

from adcompile.ir import types as T
from adcompile.ir.nodes import WRITES, memory_root, walk_op
from adcompile.ir.origins import Origins, made_new
from adcompile.ir.prims import may_raise

# ops that read no element of an array operand (a view made of it is checked where it is used;
# not a reshape, which copies when the layout allows no view)
_NO_READ = ("shape", "size", "slice", "transpose", "diagonal", "strided", "broadcast_to")


# ops that exist to raise (may_raise counts errors of computing, not these)
_FAILS = ("assert", "raise")


def adjacent_additions(fn):
    origins, params = Origins(fn), set(fn.params)
    _block(fn.body, lambda a, b: origins.apart(a, b, params))
    return fn


def _block(block, apart):
    for op in block.ops:
        for region in op.regions:
            _block(region, apart)
    placed = set()
    k = 0
    while k < len(block.ops):
        op = block.ops[k]
        if op in placed or not _movable(op):
            k += 1
            continue
        run = _run(block.ops, k, apart)
        placed.update(run)
        if len(run) > 1:
            last = block.ops.index(run[-1])
            moved = run[:-1]
            kept = [o for o in block.ops[:last] if o not in moved]
            block.ops[:] = kept + moved + block.ops[last:]
        else:
            k += 1


def _movable(op):
    if op.prim != "iadd" or not isinstance(op.operands[0].type, T.Array):
        return False
    return made_new(memory_root(op.operands[0]))


def _run(ops, k, apart):
    """The additions into ops[k]'s view that can stand together at the place of the last."""
    view = ops[k].operands[0]
    run, values = [ops[k]], [ops[k].operands[1]]
    raises = may_raise(ops[k])
    for op in ops[k + 1:]:
        if op.prim == "iadd" and op.operands[0] is view:
            run.append(op)
            values.append(op.operands[1])
            raises = raises or may_raise(op)
        elif _interferes(op, view, values, apart, raises):
            break
    return run


def _interferes(op, view, values, apart, raises):
    """Whether an addition into `view` of `values` may not move past op. `raises`: one of
    the additions moved may raise (numpy's error for a value of another shape), so op must
    not raise either (the user would get its error instead) nor write memory the caller
    sees (the caller would find op's write done)."""
    if op.regions:
        return True
    if raises and (may_raise(op) or op.prim in _FAILS or (
            op.prim in WRITES and not made_new(memory_root(op.operands[0])))):
        return True
    if any(isinstance(v.type, T.Tuple) for v in op.operands):
        return True
    if op.prim not in _NO_READ and any(
            isinstance(v.type, T.Array) and not apart(v, view) and
            not _complementary(v, view) for v in op.operands):
        return True
    if op.prim in WRITES:
        dst = op.operands[0]
        return any(isinstance(v.type, T.Array) and not apart(dst, v) for v in values)
    return False


def _complementary(a, b):
    """Whether a and b are x[:s] and x[s:] (either way round) of one array x and one s."""
    ea, eb = a.owner, b.owner
    if ea is None or eb is None or ea.prim != "slice" or eb.prim != "slice":
        return False
    if ea.operands[0] is not eb.operands[0] or len(ea.operands) != 2 or len(eb.operands) != 2:
        return False
    if ea.operands[1] is not eb.operands[1]:
        return False
    if len(ea.attrs["index"]) != 1 or len(eb.attrs["index"]) != 1:
        return False
    items = {tuple(ea.attrs["index"][0]), tuple(eb.attrs["index"][0])}
    return items == {("slice", False, True, False), ("slice", True, False, False)}

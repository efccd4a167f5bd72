"""Fusion of elementwise array ops into the loops that consume them (LLVM backend).

An elementwise op (or a copy: forward mode copies a broadcast tangent) whose every use reads
it element by element (another elementwise op, a reduction, the value of `x[...] = v` or `x[...] += v`, `sum_to`, `copy`, a part of
`np.concatenate`; `shape` and `size`
only look at its shape) is not computed where it stands: it becomes a *lazy* value, a tree of
scalar ops over the arrays it reads (its *leaves*), and each consumer computes the elements
it needs inside its own loop nest. `np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)`
is one loop over x with no temporary array. Each element is computed by the same scalar ops
in the same order as before, so fused and unfused code give the same bits.

When an op stays lazy (`plan`), decided per block in program order:
- it cannot raise (integer powers, floor division and modulo are computed where they stand,
  so their errors come where numpy's would), and every use is a consumer as above in the same
  block (a use inside a loop or branch would compute it again on every trip);
- it is used once, or its whole tree is cheap to compute again (at most RECOMPUTE scalar ops,
  no transcendental function): `x[1:] - x[:-1] ** 2` in the objective and in its adjoint is
  computed twice rather than written to memory and read back;
- nothing between it and its last use writes into memory its leaves may share: the
  consumer's own write counts (`x[1:] += x[:-1] * 2` computes the product first, as numpy
  does). Two arrays cannot share memory when they are different values and one of them was
  made by the kernel (a new array, or a view of one) while the other was too or is an
  argument; anything else (arguments, arrays merged by branches and loops or taken off a
  tape) may.
A leaf lives until the last consumer of its lazy value (see memory.deaths).

A one-dimensional concatenation of parts of its dtype is lazy too (a *join*, joins.py)
where every use reads it piece by piece (`_join_uses`) and no consumer would run more than
PIECES loops; `_plan_joined_block` plans a block again without the joins that kept an
elementwise op over them from being lazy, so joins never add an array to the plan.

`sum_to(g, like)` of a lazy g whose one use is the value of a store (reverse mode's
`x_bar[...] += sum_to(g, x.shape)`) is lazy too, with g's leaves (`deferred`): the store runs
with g itself when g has like's shape at run time, else with g summed into a new array.

At run time a lazy value (LazyV) has its shape, checked for broadcasting where the op
stands, and one stride per leaf and axis (a Pack); the consumer's loops advance one offset
per leaf (arrays.loops) and `read` evaluates the tree at those offsets.
"""

import math

import llvmlite.ir as ir

from adcompile.backends.llvm import tiles, ufuncs
from adcompile.backends.llvm.memory import sum_to_may_alias
from adcompile.backends.llvm.values import I1, I64, ITEMSIZE, MEM, ArrayV, JoinV, LazyNode, \
    LazyV, Pack, i64
from adcompile.ir import types as T
from adcompile.ir.nodes import VIEWS, WRITES, Op, users, walk, walk_op
from adcompile.ir.origins import FRESH, Origins
from adcompile.ir.prims import BINARY_MATH, ELEMENTWISE, UNARY_MATH

RECOMPUTE = 8  # scalar ops a lazy value used more than once may cost per element
JOIN = True  # lazy concatenations (joins.py); False: every concatenation is copied
SHIFTED = True  # stores into shifted views of one array in one loop; False: as before
PIECES = 4  # loops at most that a consumer of a lazy concatenation runs (one per piece)
_EXPENSIVE = frozenset(UNARY_MATH + BINARY_MATH)
_REDUCTIONS = ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin")
_UNKNOWN_OWNERS = ("if", "for", "while", "tuple_get", "tape_pop")


class Fusion:
    """The plan: which values stay lazy, and each one's leaves (the values its consumers
    read in its place, transitively); which stores into arrays run in one loop (`groups`:
    first op -> the group's ops; `later`: the others and the ops between them, lowered with
    their first)."""

    def __init__(self):
        self.lazy = set()
        self.joins = set()  # lazy concatenations and lazy values over them (joins.py)
        self.pieces = {}  # a join -> how many loops at most its consumers run
        self.join_roots = {}  # a join -> the concatenations in it
        self.deferred = set()  # sum_to results lowered with their store (_defer_sum_to)
        self.leaves = {}
        self.cost = {}
        self.expensive = set()
        self.groups = {}
        self.hoisted = {}  # a group's first store -> the ops between its stores
        self.later = set()
        self.origins = None  # ir/origins.py: arrays of new buffers known apart
        self.apart = set()  # stores of an array that cannot be memory of their destination
        self.runs = {}  # first op -> the ops of a tiled run (tiles.py)
        self.in_run = set()  # the other ops of runs, lowered with their first
        self.units = set()  # the ops of runs that make a loop
        self.spare = {}  # a for loop -> the values it yields whose last trip's elements
        # nothing reads (spare_on_last_trip)

    def saved(self):
        """A copy of what _plan_block decides, to plan a block again from."""
        return {name: type(getattr(self, name))(getattr(self, name)) for name in _PLANNED}

    def restore(self, saved):
        for name, value in saved.items():
            setattr(self, name, value)


_PLANNED = ("lazy", "joins", "pieces", "join_roots", "deferred", "leaves", "cost", "expensive")
NO_FUSION = Fusion()


def plan(fn):
    fusion = Fusion()
    fusion.origins = Origins(fn)
    blocks = [fn.body] + [region for op in walk(fn.body) for region in op.regions]
    for block in blocks:
        _plan_joined_block(block, set(fn.params), fusion)
        _plan_groups(block, set(fn.params), fusion)
        if tiles.TILES:
            tiles.plan_runs(block, set(fn.params), fusion)
    fusion.apart = _apart_stores(fn, fusion.origins)
    fusion.spare = spare_on_last_trip(fn)
    return fusion


# what reading an array's shape and nothing else looks like (a load whose value nobody uses
# is there for its IndexError: it reads one element, which then does not matter)
_SHAPE_ONLY = ("shape", "size")


def spare_on_last_trip(fn):
    """{loop: [values]}: the arrays a `for` loop's body makes and yields into a slot whose
    final value nothing after the loop reads an element of (only its shape, or a load whose
    result is unused), used by nothing but the yield: on the loop's last trip no later trip
    reads them either, so their elements need not be computed. Reverse mode's forward sweep
    carries the state so, when the gradient needs only the output's shape (ode's
    `ode_primal(x, s)[-1]`: y's last update, an RK4 step's fifth loop over memory)."""
    used = users(fn)

    def unread(v):
        return all(u.prim in _SHAPE_ONLY or (u.prim == "load" and
                                               not any(used.get(r) for r in u.results))
                   for u in used.get(v, ()))

    spare = {}
    for op in walk(fn.body):
        if op.prim != "for" or not op.regions[0].ops:
            continue
        body = op.regions[0]
        last = body.ops[-1]
        made = {r for inner in body.ops for r in inner.results}
        for v, result in zip(last.operands, op.results):
            if last.prim == "yield" and v in made and isinstance(v.type, T.Array) and \
                    len(used.get(v, ())) == 1 and unread(result):
                spare.setdefault(op, []).append(v)
    return spare


def _apart_stores(fn, origins):
    """The assignments and augmented assignments of an array whose value cannot share memory
    with the destination (two new buffers, a new buffer and an argument, shadows the
    reverse mode made...: _may_share): they need no check for overlap, nor a copy.
    Reverse mode's additions into shadow arrays are mostly such."""
    params = set(fn.params)
    return {op for op in walk(fn.body) if op.prim in ("assign", "iadd")
            and isinstance(op.operands[1].type, T.Array)
            and not _may_share(_root(op.operands[0]), _root(op.operands[1]), params,
                               origins=origins)}


def _plan_joined_block(block, params, fusion):
    """_plan_block, again without the lazy concatenations that kept an elementwise op over
    them from being lazy (too many pieces, a use a join cannot have), until there are none:
    a concatenation is lazy only where that takes no array away from the plan without
    joins."""
    blocked = set()
    while True:
        saved = fusion.saved()
        refused = _plan_block(block, params, fusion, blocked)
        if refused <= blocked:
            return
        blocked |= refused
        fusion.restore(saved)


def _plan_block(block, params, fusion, blocked=frozenset()):
    """Decide which values of `block` are lazy; returns the concatenations (of `blocked`
    none) whose joins kept an elementwise op from being lazy."""
    refused = set()
    uses = {}
    writes = []
    position = {op: k for k, op in enumerate(block.ops)}
    for k, op in enumerate(block.ops):
        written = []
        for nested in walk_op(op):
            for n, v in enumerate(nested.operands):
                uses.setdefault(v, []).append((k, op if nested is op else None, n))
            if nested.prim in WRITES:
                written.append(_root(nested.operands[0]))
        writes.append(written)
    for k, op in enumerate(block.ops):
        if _lazy_view(op) and op.operands[0] in fusion.lazy:
            _view_of_lazy(op, fusion)
            continue
        if _stored_sum_to(op, fusion):
            found = uses.get(op.results[0], [])
            if len(found) == 1 and found[0][1] is not None and \
                    _is_store_value(found[0][1], found[0][2]) and \
                    not _written_before(op, found[0][0], k, writes, params, position, fusion):
                _defer_sum_to(op, fusion)
            continue
        if not _fusible(op) or op in blocked:
            continue
        r = op.results[0]
        found = _element_uses(r, uses)
        if not found:
            continue
        joined = op.prim == "concatenate" or any(x in fusion.joins for x in op.operands)
        tree = _lazy_tree(op, k, found, uses, writes, params, position, fusion, joined)
        if tree is None:
            if joined and op.prim != "concatenate":  # (an array only for its joins)
                refused.update(c for x in op.operands for c in fusion.join_roots.get(x, ()))
            continue
        _make_lazy(op, tree, joined, fusion)
    return refused


def _lazy_tree(op, k, found, uses, writes, params, position, fusion, joined):
    """(leaves, cost, expensive, pieces) of op's result as a lazy value, or None where it
    must be computed where it stands (see the module's docstring; joins.py for joins)."""
    r = op.results[0]
    pieces = _pieces(op, fusion)
    if joined and (pieces > PIECES or not _join_uses(r, uses)):
        return None
    leaves, cost, expensive = set(), 1, _expensive(op)
    for x in op.operands:
        if x in fusion.lazy:
            leaves |= fusion.leaves[x]
            cost += fusion.cost[x]
            expensive = expensive or x in fusion.expensive
        else:
            leaves.add(x)
    computing = [u for u in found if u[1].prim not in ("shape", "size")]
    if len(computing) > 1 and (expensive or cost > RECOMPUTE):
        return None
    roots = {_root(v) for v in leaves if isinstance(v.type, T.Array)}
    last = max((j for j, _, _ in computing), default=k)  # (a shape reads no element)
    if any(_may_share(w, leaf, params, position, origins=fusion.origins)
           for j in range(k + 1, last + 1) for w in writes[j] for leaf in roots):
        return None
    return leaves, cost, expensive, pieces


def _make_lazy(op, tree, joined, fusion):
    r = op.results[0]
    leaves, cost, expensive, pieces = tree
    fusion.lazy.add(r)
    fusion.leaves[r] = leaves
    fusion.cost[r] = cost
    if expensive:
        fusion.expensive.add(r)
    if joined:
        fusion.joins.add(r)
        fusion.pieces[r] = pieces
        fusion.join_roots[r] = frozenset(
            c for x in op.operands for c in fusion.join_roots.get(x, ())) | \
            ({op} if op.prim == "concatenate" else set())


def _pieces(op, fusion):
    """How many loops at most a consumer of op's lazy value runs (joins.py): a join, one per
    piece of each part; an elementwise op over joins, the product of theirs."""
    counts = [fusion.pieces.get(x, 1) for x in op.operands]
    return sum(counts) if op.prim == "concatenate" else math.prod(counts)


def _stored_sum_to(op, fusion):
    """`sum_to(g, like)` of a lazy g to a shape of as many axes, no cast: reverse mode's
    `x_bar[...] += sum_to(g, x.shape)`, where g usually has x's shape already."""
    if op.prim != "sum_to" or op.operands[0] not in fusion.lazy:
        return False
    g, like, r = op.operands[0].type, op.operands[1].type, op.results[0].type
    return isinstance(like, T.Array) and like.ndim == g.ndim and r.dtype == g.dtype


def _is_store_value(user, n):
    return user.prim in ("iadd", "assign") and n == 1


def _written_before(op, last, k, writes, params, position, fusion):
    """Whether an op after k, up to `last` (the store included), may write into the memory of
    the leaves of op's lazy operand."""
    leaves = fusion.leaves[op.operands[0]]
    roots = {_root(v) for v in leaves if isinstance(v.type, T.Array)}
    return any(_may_share(w, leaf, params, position, origins=fusion.origins)
               for j in range(k + 1, last + 1) for w in writes[j] for leaf in roots)


def _defer_sum_to(op, fusion):
    """The sum_to is lowered with its store: when at run time g has like's shape, the store
    reads g's elements in place (no array, no zero fill, no second pass); see
    FusionLowering.resolving_sums. It counts as lazy (its leaves are g's)."""
    r, g = op.results[0], op.operands[0]
    fusion.lazy.add(r)
    fusion.deferred.add(r)
    fusion.leaves[r] = fusion.leaves[g]
    fusion.cost[r] = fusion.cost[g]
    if g in fusion.expensive:
        fusion.expensive.add(r)


def _lazy_view(op):
    """A view a lazy value can pass through: a slice (or transpose) of it is the same tree
    over views of its leaves."""
    return op.prim in ("slice", "transpose") and isinstance(op.results[0].type, T.Array)


def _view_of_lazy(op, fusion):
    r, x = op.results[0], op.operands[0]
    fusion.lazy.add(r)
    fusion.leaves[r] = fusion.leaves[x]
    fusion.cost[r] = fusion.cost[x]
    if x in fusion.expensive:
        fusion.expensive.add(r)
    if x in fusion.joins:
        fusion.joins.add(r)
        fusion.pieces[r] = fusion.pieces[x]
        fusion.join_roots[r] = fusion.join_roots[x]


def _join_uses(v, uses, depth=0):
    """Whether every use of v (a concatenation, or a value over one) reads it where a join
    can be read piece by piece (joins.py): an elementwise op or a concatenation with a
    one-dimensional result, the value of a store, a slice without a step (whose uses
    qualify in turn), its shape."""
    for _, user, n in uses.get(v, ()):
        if user is None:
            return False
        if user.prim == "slice" and n == 0:
            if depth >= 16 or not _stepless(user) or \
                    not _join_uses(user.results[0], uses, depth + 1):
                return False
        elif ufuncs.replaces(user):
            return False
        elif user.prim in ELEMENTWISE or user.prim == "concatenate":
            t = user.results[0].type
            if not (isinstance(t, T.Array) and t.ndim == 1):
                return False
        elif not _is_store_value(user, n) and user.prim not in ("shape", "size"):
            return False
    return True


def _stepless(op):
    """A slice of one axis without a step (a view of a join that keeps it one piece per
    part)."""
    index = op.attrs["index"]
    return len(index) == 1 and index[0][0] == "slice" and not index[0][3] and \
        isinstance(op.results[0].type, T.Array)


def _joinable(op):
    """A one-dimensional concatenation of parts of its own dtype (joins.py)."""
    t = op.results[0].type
    return isinstance(t, T.Array) and t.ndim == 1 and all(
        isinstance(x.type, T.Array) and x.type.ndim == 1 and x.type.dtype == t.dtype
        for x in op.operands)


def _element_uses(v, uses, depth=0):
    """The uses of v that read its elements, through views that can stay lazy (each such
    view's own uses instead of it), or None when some use needs v in memory (an empty
    list when v is unused)."""
    found = []
    for use in uses.get(v, ()):
        _, user, n = use
        if user is not None and n == 0 and _lazy_view(user) and depth < 16:
            inner = _element_uses(user.results[0], uses, depth + 1)
            if not inner:
                return None
            found += inner
        elif user is not None and _consumes(user, n):
            found.append(use)
        else:
            return None
    return found


def _plan_groups(block, params, fusion):
    """Runs of `x[...] = v` / `x[...] += v` with nothing but constants, shapes and views
    that cannot fail (`_hoistable`) between them, and where no value one of them reads may
    share memory with what another writes: they may run as one loop nest, a pass over memory
    instead of one per store (the adjoint of x[1:] and x[:-1] in reverse mode; a user's
    `x[1:] += a[1:]; x[:-1] -= b[:-1]`). The ops between are lowered first, where the group
    starts (`hoisted`). Whether a group runs as one loop is decided at run time
    (FusionLowering.store_group). Reductions never join a group: they add in numpy's order
    (pairwise.py), not element by element with the stores."""
    ops = block.ops
    k = 0
    while k < len(ops):
        if not _groupable(ops[k]):
            k += 1
            continue
        group, between, j = [ops[k]], [], k + 1
        while j < len(ops) and (_groupable(ops[j]) or _hoistable(ops[j])):
            if _groupable(ops[j]):
                if not _independent(group + [ops[j]], params, fusion):
                    break
                group.append(ops[j])
            else:
                between.append(ops[j])
            j += 1
        if len(group) > 1:
            pairs = [(p, q) for q in range(len(group)) for p in range(q)
                     if _may_share(_root(group[p].operands[0]), _root(group[q].operands[0]),
                                   params, origins=fusion.origins)]
            line = len({_root(op.operands[0]) for op in group}) == 1
            last = ops.index(group[-1])
            fusion.hoisted[group[0]] = [op for op in between if ops.index(op) < last]
            fusion.groups[group[0]] = (group, pairs, line)
            fusion.later.update(group[1:])
            fusion.later.update(fusion.hoisted[group[0]])
        k = ops.index(group[-1]) + 1


def _hoistable(op):
    """An op that may be lowered earlier than it stands: a constant, a shape, or a view by
    slices without steps and new axes (it reads no memory and cannot fail)."""
    if op.prim in ("const", "shape", "size"):
        return True
    return op.prim == "slice" and isinstance(op.operands[0].type, T.Array) and all(
        item[0] == "new" or (item[0] == "slice" and not item[3]) for item in op.attrs["index"])


def _groupable(op):
    """A store of an array, or of a float into a float array (the zero fills first_store
    puts beside a shadow's first addition), that cannot raise."""
    if op.prim not in ("assign", "iadd") or not isinstance(op.operands[0].type, T.Array):
        return False
    dst, value = op.operands[0].type, op.operands[1].type
    if not isinstance(value, T.Array) and not (value.is_float and dst.is_float):
        return False
    return op.prim == "assign" or op.attrs.get("op", "add") in ("add", "sub", "mul")


def _independent(group, params, fusion):
    """No store of the group writes where another one reads (its value's arrays)."""
    for a in group:
        written = _root(a.operands[0])
        for b in group:
            value = b.operands[1]
            reads = fusion.leaves[value] if value in fusion.lazy else {value}
            if any(isinstance(v.type, T.Array) and
                   _may_share(written, _root(v), params, origins=fusion.origins)
                   for v in reads):
                return False
    return True


def _fusible(op):
    if op.prim == "copy":  # elementwise too: each element is its operand's
        return isinstance(op.results[0].type, T.Array)
    if op.prim == "concatenate":
        return JOIN and _joinable(op)
    if op.prim not in ELEMENTWISE or len(op.results) != 1 or ufuncs.replaces(op):
        return False  # (numpy's loops compute a block at a time: ufuncs.py)
    t = op.results[0].type
    if not isinstance(t, T.Array):
        return False
    return not (op.prim in ("pow", "floordiv", "mod") and not t.is_float)


def _expensive(op):
    """A libm call (a power too, unless its exponent is a small constant: x ** 2 is x * x)."""
    if op.prim == "pow":
        e = op.operands[1]
        return not (e.owner is not None and e.owner.prim == "const" and
                    float(e.owner.attrs["value"]) in (0.0, 1.0, 2.0))
    return op.prim in _EXPENSIVE


def _consumes(user, n):
    """Whether `user` reads its operand n element by element (or only its shape)."""
    prim = user.prim
    if prim in ELEMENTWISE:
        return isinstance(user.results[0].type, T.Array)
    if prim in _REDUCTIONS or prim in ("sum_to", "copy", "shape", "size"):
        return n == 0
    if prim == "concatenate":  # each part is copied into its place in the result
        return True
    return prim in ("iadd", "assign") and n == 1


def _root(v):
    """The value whose memory v's array may be in: views, tuples, and a sum_to that may
    return its operand itself (memory.sum_to_may_alias) followed back."""
    while v.owner is not None:
        owner = v.owner
        if (owner.prim in VIEWS and isinstance(owner.operands[0].type, T.Array)) or \
                (owner.prim == "sum_to" and sum_to_may_alias(owner)):
            v = owner.operands[0]
        elif owner.prim == "tuple_get" and owner.operands[0].owner is not None and \
                owner.operands[0].owner.prim == "tuple":
            v = owner.operands[0].owner.operands[owner.attrs["index"]]
        else:
            break
    return v


def _made_after(a, b, position):
    """Whether root a is a new buffer made by an op of the block after b was defined (b is
    defined by an earlier op, or outside the block's ops): a buffer that is new cannot be
    memory that was alive when it was made, and b, used after a was made, was alive then."""
    owner = a.owner
    if owner is None or owner.prim not in FRESH or owner not in position:
        return False
    made = b.owner
    return made is None or made not in position or position[made] < position[owner]


def _made_here(root):
    return root.owner is not None and root.owner.prim not in _UNKNOWN_OWNERS


def _may_share(a, b, params, position=None, *, origins):
    """Whether the arrays rooted at a and b may share memory. `position`: the index of each
    op of the block both are used in, when a new buffer made there (_made_after) cannot be an
    array that existed before it. `origins` (ir/origins.py) knows arrays apart that
    different new-buffer ops made, through the slots of loops (a reverse-mode loop's
    carried shadow and the function's other shadows), and shadows apart from values."""
    if a is b:
        return True
    if origins.apart(a, b, params):
        return False
    if position is not None and (_made_after(a, b, position) or _made_after(b, a, position)):
        return False
    if _made_here(a):
        return not (_made_here(b) or b in params)
    if _made_here(b):
        return a not in params
    return True


class FusionLowering:
    """Lazy values in the kernel's lowering (mixed into lower._Lowering)."""

    fusion = NO_FUSION
    apart = frozenset()  # Fusion.apart of the kernel (outlined ops' lowerings share it)

    def lazy_value(self, op, values, shape, strides):
        """The lazy value of elementwise `op`, whose operands are `values` (array operands
        with `strides` in the result's axes)."""
        element_op, slots = self.element_op(op)
        parts, scalars, packs = [], [], [[] for _ in shape]
        strides = iter(strides)
        for x, v in zip(op.operands, values):
            if isinstance(v, LazyV):
                parts.append(v.node)
                for pack, s in zip(packs, next(strides)):
                    pack.extend(s.items if isinstance(s, Pack) else [s] * v.width)
            elif isinstance(v, ArrayV):
                parts.append(v)
                for pack, s in zip(packs, next(strides)):
                    pack.append(s)
            else:
                parts.append(None)
                scalars.append((x, v))
        node = LazyNode(element_op, slots, parts, scalars)
        return LazyV(op.results[0].type.dtype, shape, [Pack(p) for p in packs], node)

    def lazy_copy(self, op, x):
        """The lazy value of `op` = copy of x: x's own tree, or a leaf read as it is (a cast
        to its own dtype, which changes no bit)."""
        if isinstance(x, LazyV):
            return x
        t = op.results[0].type
        identity = Op("cast", [op.operands[0]], [t], {"to": t}, loc=op.loc)
        return self.lazy_value(identity, [x], x.shape, [x.strides])

    def lazy_at(self, lazy, offsets, shape, strides):
        """`lazy` with its leaves moved on by `offsets` (a Pack), of that shape and those
        strides: a view of a lazy value is the same tree over views of its leaves."""
        leaves = [leaf.view(self.b.gep(leaf.data, [o], source_etype=MEM[leaf.dtype]),
                            leaf.shape, leaf.strides)
                  for leaf, o in zip(lazy.node.leaves(), offsets.items)]
        registers = [reg for node in lazy.node.walk() for _, reg in node.scalars]
        return LazyV(lazy.dtype, shape, strides,
                     lazy.node.rebuilt(iter(leaves), iter(registers)))

    def lazy_element(self, lazy, offsets):
        """The element of `lazy` at `offsets` (a Pack), as a register of its dtype."""
        if not isinstance(offsets, Pack):  # a 0-d value: every leaf at its offset 0
            offsets = Pack([offsets] * lazy.width)
        value, node = self.node_element(lazy.node, iter(offsets.items))
        return self.cast_to(value, node.op.results[0].type.dtype, lazy.dtype)

    def node_element(self, node, offsets):
        for v, reg in node.scalars:
            self.values[v] = reg
        for slot, part in zip(node.slots, node.parts):
            if isinstance(part, LazyNode):
                value, child = self.node_element(part, offsets)
                self.values[slot] = self.cast_to(value, child.op.results[0].type.dtype,
                                                 slot.type.dtype)
            elif part is not None:
                self.values[slot] = self.read(part, next(offsets))
        return self.scalar_rule(node.op.prim)(self, node.op), node

    # -- sum_to lowered with its store ---------------------------------------------------------
    def resolving_sums(self, ops, lower):
        """lower() the stores `ops` whose values include deferred sum_to results
        (_defer_sum_to): when every such g has its like's shape, with g itself as the value,
        else with g summed into a new array (as sum_to would have made it)."""
        deferred = [op.operands[1] for op in ops if op.operands[1] in self.fusion.deferred]
        if not deferred:
            return lower()
        b = self.b
        pending = {v: self.values[v] for v in deferred}
        same = ir.Constant(I1, 1)
        for g, like, _ in pending.values():
            for n, d in zip(like.shape, g.shape):
                same = b.and_(same, b.icmp_signed("==", n, d))
        with b.if_else(same) as (in_place, summed):
            with in_place:
                for v, (g, _, _) in pending.items():
                    self.values[v] = g
                lower()
            with summed:
                made = []
                for v, (g, like, op) in pending.items():
                    self.values[v] = self.summed_to(g, like, op.results[0].type, 0, op.loc)
                    made.append(self.values[v])
                lower()
                for array in made:
                    self.release(array)
        self.values.update(pending)  # (what the deaths release: nothing)
        return None

    # -- stores in one loop ------------------------------------------------------------------
    def store_group(self, ops, pairs, line=False):
        """The stores `ops` (see _plan_groups) in one loop nest when, at run time, the
        destinations have one shape, every value fits its destination, and no two
        destinations that may share memory overlap unless they are the same elements: then
        every location is written in the order of the program and no iteration reads what
        another wrote. Destinations that are views of one array (`line`) on one line along
        their first axis, shifted (x[1:] += a; x[:1] = 0; x[:-1] += b), run as one loop
        over the part they all cover (`shifted_stores`). Otherwise each runs alone."""
        dsts = [self.v(op.operands[0]) for op in ops]
        values = [self.v(op.operands[1]) for op in ops]
        ndim = dsts[0].ndim
        if any(d.ndim != ndim for d in dsts) or any(_ndim(v) > ndim for v in values) \
                or any(isinstance(v, JoinV) for v in values):  # (a join: a loop per piece)
            for op in ops:
                self.lower_alone(op)
            return
        if line and ndim and SHIFTED and any(isinstance(v, (ArrayV, LazyV)) for v in values):
            self.shifted_stores(ops, pairs, dsts, values)
            return
        self.stores_together(ops, pairs, dsts, values)

    def stores_together(self, ops, pairs, dsts, values):
        """One loop nest when the destinations have one shape and are apart or the same
        elements and the values fit (else each store alone)."""
        b = self.b
        shape = dsts[0].shape
        together = ir.Constant(I1, 1)
        for d in dsts[1:]:
            for n, m in zip(d.shape, shape):
                together = b.and_(together, b.icmp_signed("==", n, m))
        fit, value_strides = self.fitted(values, [shape] * len(values))
        together = b.and_(together, fit)
        for p, q in pairs:
            together = b.and_(together, self.apart_or_same(dsts[p], dsts[q]))
        strides = [d.strides for d in dsts] + value_strides
        with b.if_else(together) as (fused, alone):
            with fused:
                self.parallel_loops(shape, strides, lambda offs: self.store_elements(
                    ops, dsts, values, offs), dsts)
            with alone:
                for op in ops:
                    self.lower_alone(op)

    def fitted(self, values, shapes):
        """(whether each value broadcasts to its shape, each value's strides in it)."""
        b = self.b
        fit = ir.Constant(I1, 1)
        value_strides = []
        for v, shape in zip(values, shapes):
            if not isinstance(v, (ArrayV, LazyV)):  # a number: read nowhere
                value_strides.append([i64(0)] * len(shape))
                continue
            lead = len(shape) - v.ndim
            strides = [self.no_stride(v)] * lead
            for j, d in enumerate(v.shape):
                one = b.icmp_signed("==", d, i64(1))
                fit = b.and_(fit, b.or_(one, b.icmp_signed("==", d, shape[lead + j])))
                strides.append(self.broadcast_stride(d, v.strides[j]))
            value_strides.append(strides)
        return fit, value_strides

    # -- shifted stores into one array ---------------------------------------------------------
    def on_one_line(self, dsts):
        """Whether the destinations (views of one array) differ only by where their first
        axis starts and how long it is: the same nonzero first stride, the same other axes,
        and data pointers a whole number of first strides apart."""
        b = self.b
        first = dsts[0]
        step = b.mul(first.strides[0], i64(ITEMSIZE[first.dtype]))
        ok = b.icmp_signed("!=", step, i64(0))
        for d in dsts[1:]:
            ok = b.and_(ok, b.icmp_signed("==", d.strides[0], first.strides[0]))
            for n, m, s, t in zip(d.shape[1:], first.shape[1:], d.strides[1:],
                                  first.strides[1:]):
                ok = b.and_(ok, b.and_(b.icmp_signed("==", n, m), b.icmp_signed("==", s, t)))
            apart = b.sub(b.ptrtoint(d.data, I64), b.ptrtoint(first.data, I64))
            ok = b.and_(ok, b.icmp_signed("==", b.srem(apart, self.nonzero(step)), i64(0)))
        return ok

    def nonzero(self, n):
        return self.b.select(self.b.icmp_signed("==", n, i64(0)), i64(1), n)

    def shifted_stores(self, ops, pairs, dsts, values):
        """Stores into views of one array. When they lie on one line (on_one_line), each
        destination covers [start, end) of it (first strides from the first destination's
        start). Where every store of an array covers the line (the core), one loop nest makes
        each element's stores of arrays in the program's order, with one write (a shadow's
        x[1:] += a; x[:-1] += b reads a and b and writes x once, rather than writing x, then
        reading and writing it again); before and after the core, each store runs over its
        part alone, in order, and so do stores of numbers, which must miss the core (the
        zero fill x[:1] = 0 of first_store). Otherwise (not on one line, the core is empty,
        a number falls in it or a value does not fit its destination): stores_together."""
        b = self.b
        starts, ends = self.line_bounds(dsts)
        arrays = [k for k, v in enumerate(values) if isinstance(v, (ArrayV, LazyV))]
        core = _fold(b, [starts[k] for k in arrays], ">")
        core_end = _fold(b, [ends[k] for k in arrays], "<")
        fit, _ = self.fitted(values, [d.shape for d in dsts])
        ok = b.and_(b.and_(self.on_one_line(dsts), fit), b.icmp_signed("<", core, core_end))
        for k in set(range(len(ops))) - set(arrays):
            ok = b.and_(ok, b.or_(b.icmp_signed("<=", ends[k], core),
                                  b.icmp_signed(">=", starts[k], core_end)))
        with b.if_else(ok) as (fused, other):
            with fused:
                edges = ((_fold(b, starts, "<"), core), (core_end, _fold(b, ends, ">")))
                for lo, hi in edges:
                    self.store_edge(ops, dsts, values, starts, ends, lo, hi)
                self.store_part([ops[k] for k in arrays], [dsts[k] for k in arrays],
                                [values[k] for k in arrays],
                                [b.sub(core, starts[k]) for k in arrays], b.sub(core_end, core))
            with other:
                self.stores_together(ops, pairs, dsts, values)

    def line_bounds(self, dsts):
        """Where each destination starts and ends on the line, in first strides from the
        first destination's start (meaningful when on_one_line)."""
        b = self.b
        first = dsts[0]
        step = self.nonzero(b.mul(first.strides[0], i64(ITEMSIZE[first.dtype])))
        starts = [b.sdiv(b.sub(b.ptrtoint(d.data, I64), b.ptrtoint(first.data, I64)), step)
                  for d in dsts]
        return starts, [b.add(start, d.shape[0]) for start, d in zip(starts, dsts)]

    def store_edge(self, ops, dsts, values, starts, ends, lo, hi):
        """Each store alone, in order, over its part of [lo, hi) of the line."""
        b = self.b
        for op, dst, value, start, end in zip(ops, dsts, values, starts, ends):
            part = _fold(b, [lo, start], ">")
            length = b.sub(_fold(b, [hi, end], "<"), part)
            self.store_alone_over(op, dst, value, b.sub(part, start),
                                  _fold(b, [length, i64(0)], ">"))

    def store_alone_over(self, op, dst, value, skip, length):
        """The store `op` alone over `length` indices of its destination's first axis after
        `skip` (lowered as the store itself, with those parts of its operands: the function
        its other runs call)."""
        dst_ir, value_ir = op.operands[:2]
        saved = self.values[dst_ir], self.values[value_ir]
        self.values[dst_ir] = self.first_axis_part(dst, skip, length)
        if _ndim(value) == dst.ndim:
            self.values[value_ir] = self.first_axis_part(value, skip, length, True)
        try:
            self.lower_alone(op)
        finally:
            self.values[dst_ir], self.values[value_ir] = saved

    def store_part(self, ops, dsts, values, skips, length):
        """The stores `ops` over `length` indices of their destinations' first axes, after
        skipping `skips` of them (the same elements for every destination), in one loop."""
        # the destinations' parts are the same elements (shifted_stores): one array, so
        # that LLVM sees one address per element, keeps it in a register between the stores
        # and writes it once
        parts = [self.first_axis_part(dsts[0], skips[0], length)] * len(dsts)
        values = [self.first_axis_part(v, k, length, True) if _ndim(v) == d.ndim else v
                  for v, k, d in zip(values, skips, dsts)]
        shape = parts[0].shape
        _, value_strides = self.fitted(values, [shape] * len(values))
        strides = [d.strides for d in parts] + value_strides
        self.parallel_loops(shape, strides, lambda offs: self.store_elements(
            ops, parts, values, offs), parts[:1])

    def first_axis_part(self, a, skip, length, broadcast=False):
        """a's indices [skip, skip + length) of its first axis (when `broadcast`, a value's
        axis of length 1, broadcast along the destination's, stays as it is)."""
        b = self.b
        shape = [length] + a.shape[1:]
        if broadcast:
            one = b.icmp_signed("==", a.shape[0], i64(1))
            skip = b.select(one, i64(0), skip)
            shape[0] = b.select(one, i64(1), length)
        if isinstance(a, LazyV):
            offsets = Pack([b.mul(skip, s) for s in a.strides[0].items])
            return self.lazy_at(a, offsets, shape, a.strides)
        data = b.gep(a.data, [b.mul(skip, a.strides[0])], source_etype=MEM[a.dtype])
        return a.view(data, shape, a.strides)

    def apart_or_same(self, a, c):
        """Whether arrays a and c share no element, or are the same elements in the same
        order, each written once (no zero stride)."""
        b = self.b
        same = b.icmp_unsigned("==", a.data, c.data)
        for s, t in zip(a.strides, c.strides):
            same = b.and_(same, b.icmp_signed("==", s, t))
        for t in a.strides:
            same = b.and_(same, b.icmp_signed("!=", t, i64(0)))
        return b.or_(b.not_(self.may_overlap(a, c)), same)

    def store_elements(self, ops, dsts, values, offsets):
        """The group's stores of one element each, in order. Its values read no destination
        (_independent): alias scopes say so (lower.alias_info)."""
        n = len(ops)
        scopes = self.new_scopes("adcompile.group.dst", "adcompile.group.src")
        saved = self.group_access
        try:
            for op, dst, value, at, read_at in zip(ops, dsts, values, offsets[:n],
                                                   offsets[n:]):
                self.group_access = ("src", scopes)
                if isinstance(value, (ArrayV, LazyV)):
                    element, dtype = self.read(value, read_at), value.dtype
                else:
                    element, dtype = value, op.operands[1].type.dtype
                self.group_access = ("dst", scopes)
                if op.prim == "assign":
                    self.write(dst, at, element, dtype)
                    continue
                combine = self.combiner(op.attrs.get("op", "add"), dst.dtype, op.operands[1],
                                        op.loc)
                self.write(dst, at, combine(self.old_element(op, dst, at), element),
                           combine.dtype)
        finally:
            self.group_access = saved


def _ndim(value):
    return value.ndim if isinstance(value, (ArrayV, LazyV, JoinV)) else 0


def _fold(b, values, cmp):
    """The least (cmp "<") or greatest (">") of i64 registers."""
    out = values[0]
    for v in values[1:]:
        out = b.select(b.icmp_signed(cmp, v, out), v, out)
    return out

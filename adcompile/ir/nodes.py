"""The IR: typed SSA values, operations, blocks with arguments, functions.

Control flow is structured: an `if`, `for` or `while` operation owns regions (blocks) and its
results are the values its regions `yield`, so every merge point is explicit and block
arguments replace phi nodes. A `for` keeps its range (start, stop, step) and hence its trip
count; loop-carried variables are the block arguments of the loop body. Values defined outside
a region are visible inside it (dominance follows nesting).

Invariants (checked by `verifier.verify`): every value is defined once; every use is dominated
by its definition; every block ends with exactly one terminator (`yield`, `condition` or
`return`); operand and result counts match the primitive's signature.
"""

import itertools

_ids = itertools.count()


class Value:
    """An SSA value; `name` is a hint from the user's variable, used by printers/emitters."""

    __slots__ = ("type", "name", "id", "owner")

    def __init__(self, type, name=None, owner=None):
        self.type = type
        self.name = name
        self.id = next(_ids)
        self.owner = owner

    def __repr__(self):
        return f"Value({self.name or ''}#{self.id}: {self.type})"


class Op:
    """One operation: `results = prim(operands) {attrs} [regions]`."""

    __slots__ = ("prim", "operands", "results", "attrs", "regions", "loc")

    def __init__(self, prim, operands, result_types=(), attrs=None, regions=(), loc=None,
                 names=()):
        self.prim = prim
        self.operands = list(operands)
        self.attrs = dict(attrs or {})
        self.regions = list(regions)
        self.loc = loc
        names = list(names) + [None] * (len(result_types) - len(names))
        self.results = [Value(t, n, self) for t, n in zip(result_types, names)]

    @property
    def result(self):
        return self.results[0]

    def __repr__(self):
        return f"Op({self.prim})"


class Block:
    """A list of operations with block arguments; the last operation is a terminator."""

    __slots__ = ("params", "ops")

    def __init__(self, params=()):
        self.params = list(params)
        self.ops = []

    @property
    def terminator(self):
        return self.ops[-1] if self.ops else None


class Function:
    """A compiled function for one argument signature."""

    def __init__(self, name, params, body, filename=None, first_line=None):
        self.name = name
        self.params = params
        self.body = body
        self.filename = filename
        self.first_line = first_line

    @property
    def result_type(self):
        ret = self.body.terminator
        return ret.attrs.get("type")


def walk(block):
    """Every operation in `block` and its nested regions, in program order."""
    stack = [iter(block.ops)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        yield op
        for region in reversed(op.regions):
            stack.append(iter(region.ops))


def users(fn):
    """value -> the ops using it (once per operand slot), for the whole function."""
    found = {}
    for op in walk(fn.body):
        for v in op.operands:
            found.setdefault(v, []).append(op)
    return found


def walk_op(op):
    """`op` and every operation in its regions, in program order."""
    yield op
    for region in op.regions:
        yield from walk(region)


WRITES = ("store", "add_at", "assign", "iadd", "scatter_add", "mask_add")
VIEWS = ("load", "slice", "transpose", "diagonal", "broadcast_to", "reshape", "strided")


# ops whose array result may be memory of their first operand (a reshape is a view whenever
# the layout allows one)
MEMORY_VIEWS = ("load", "slice", "transpose", "diagonal", "strided", "reshape")


def region_slots(op):
    """The values of each slot of region op `op` (a `for`, `while` or `if`): one tuple per
    result, of the values that are that result on some path (the initial value, the carried
    parameters, the yielded values, the result itself); () for other ops."""
    if op.prim == "for":
        body = op.regions[0]
        return [(op.operands[3 + k], body.params[1 + k], body.terminator.operands[k], r)
                for k, r in enumerate(op.results)]
    if op.prim == "while":
        head, body = op.regions
        return [(op.operands[k], head.params[k], body.params[k], head.terminator.operands[1 + k],
                 body.terminator.operands[k], r) for k, r in enumerate(op.results)]
    if op.prim == "if":
        return [tuple(region.terminator.operands[k] for region in op.regions) + (r,)
                for k, r in enumerate(op.results)]
    return ()


def memory_root(array):
    """The array whose memory `array` may be (a view's or a row's operand, followed to the
    first array that is not one: MEMORY_VIEWS)."""
    while array.owner is not None and array.owner.prim in MEMORY_VIEWS:
        array = array.owner.operands[0]
    return array


def written_params(fn):
    """Indices of the parameters whose arrays `fn` may write into (store, add_at, assign,
    iadd, scatter_add, mask_add; through any view, reshape included as it may be one). An
    array made inside the function (np.zeros, x.copy(), x * 2) is not an argument's; an item
    popped from a tape the function made is one of the arrays pushed on it; one reached
    through a tuple or merged by a branch or loop cannot be traced to one parameter: then
    every parameter counts."""
    pushed = {}
    for op in walk(fn.body):
        if op.prim == "tape_push":
            pushed.setdefault(op.operands[0], []).append(op.operands[1])
    written = set()
    for op in walk(fn.body):
        if op.prim in WRITES:
            found = _params_under(fn, op.operands[0], pushed, {})
            if found is None:
                return set(range(len(fn.params)))
            written |= found
    return written


def _params_under(fn, array, pushed, tapes):
    """The indices of the parameters whose memory `array` may be, or None where that cannot
    be traced (see written_params); `tapes` keeps each tape's answer (None while it is being
    worked out: a tape holding its own items cannot be traced)."""
    while array.owner is not None and array.owner.prim in VIEWS:
        array = array.owner.operands[0]
    if array in fn.params:
        return {fn.params.index(array)}
    owner = array.owner
    if owner is None or owner.prim in ("if", "for", "while", "tuple_get"):
        return None
    if owner.prim != "tape_pop":
        return set()
    tape = owner.operands[0]
    if tape.owner is None or tape.owner.prim != "tape_new":
        return None
    if tape not in tapes:
        tapes[tape] = None
        found = set()
        for item in pushed.get(tape, ()):
            under = _params_under(fn, item, pushed, tapes)
            if under is None:
                return None
            found |= under
        tapes[tape] = found
    return tapes[tape]


def export_from_if(op, branch, value):
    """A new result of the `if` op: the scalar `value`, computed in its region `branch`, from
    that branch, and a zero from the other (for callers whose readers run only when `branch`
    did). Returns the new result."""
    for k, region in enumerate(op.regions):
        if k == branch:
            region.terminator.operands.append(value)
        else:
            zero = Op("const", [], [value.type], {"value": _ZERO.get(value.type.dtype, 0.0),
                                                  "type": value.type})
            region.ops.insert(len(region.ops) - 1, zero)
            region.terminator.operands.append(zero.results[0])
    op.attrs["result_types"] = list(op.attrs["result_types"]) + [value.type]
    result = Value(value.type, value.name, op)
    op.results.append(result)
    return result


_ZERO = {"bool": False, "i64": 0}

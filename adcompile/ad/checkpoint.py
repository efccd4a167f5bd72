"""Which loops reverse mode treats per iteration (checkpointing), and which loads it may then
reload from memory instead of taping.

A loop qualifies when running one of its iterations again computes what it computed the
first time. That holds when its body (scalar code only: no array values, no writes but
element stores) reads arrays nothing writes, or *scratch* arrays it fully overwrote earlier
in the same iteration (a 1-d array allocated with length S whose elements a `for j in
range(S)` loop stores at index j before any read; the rule is applied in program order,
nested regions included), and its carried values are scalars. Writing the same values again
into memory is harmless: the adjoint never reads the primal memory of an array anything
writes, except through the loads declared reloadable here.

`choose` picks, innermost first, the qualifying loops that compute active values and whose
nested loops would tape values the adjoint reads (so one iteration's tape grows with the
inner trip counts), unless a loop nested in them was picked already. Each gets a strategy,
by cost (`_plan`), stated in the derivative source as a comment on the reversed loop:
- "store" when loops nest two deep in the body (its work grows faster than the 1-d scratch
  state it leaves): the scratch arrays are put on a tape at the end of each iteration and
  put back before its adjoint (reverse.py fills a cheaply computed one again instead);
- "recompute" otherwise: the forward pass runs the body as plain primal code and the
  reversed loop runs each iteration's forward part again right before its adjoint
  (Tapenade's and Enzyme's per-iteration checkpointing).
Either way, a scalar load of a scratch array inside the body can be reloaded by the adjoint
when nothing in the body writes that array after the load, and no loop around the load
inside the body writes it (the memory then holds what the load read).
"""

from adcompile.ir import types as T
from adcompile.ir.nodes import memory_root as _root
from adcompile.ir.nodes import users, walk

_LOOPS = ("for", "while")

# False gives the programs reverse mode wrote before this module existed: every value a
# region's adjoint needs taped, nothing recomputed from memory, counters or running the
# loop again (the tests compare the two, bit for bit). Not part of the cache key: flip it
# only with the on-disk cache off.
ENABLED = True


def _const(v, value):
    owner = v.owner
    return owner is not None and owner.prim == "const" and owner.attrs["value"] == value \
        and isinstance(owner.attrs["value"], int)


def covered_array(loop):
    """The 1-d array a `for j in range(0, S, 1)` loop overwrites entirely (its body stores
    a[j] unconditionally, and S is a's length), or None."""
    if loop.prim != "for":
        return None
    start, stop, step = loop.operands[:3]
    if not (_const(start, 0) and _const(step, 1)):
        return None
    body = loop.regions[0]
    index = body.params[0]
    for op in body.ops:
        if op.prim == "store" and len(op.operands) == 3 and op.operands[1] is index:
            array = op.operands[0]
            if _length_is(array, stop):
                return array
    return None


def _length_is(array, length):
    """Whether the 1-d `array` certainly has `length` elements."""
    if not (isinstance(array.type, T.Array) and array.type.ndim == 1):
        return False
    if length.owner is not None and length.owner.prim == "shape" and \
            length.owner.operands[0] is array:
        return True
    owner = array.owner
    return owner is not None and owner.prim == "alloc" and owner.operands[0] is length


def _reads_ok(block, covered, written):
    """Whether re-running `block` reads only unwritten arrays and arrays covered before the
    read (see the module docstring); `covered` grows with the block's covering loops."""
    for op in block.ops:
        if any(isinstance(r.type, (T.Array, T.Tuple, T.Tape)) for r in op.results):
            return False
        if op.prim in ("add_at", "assign", "iadd", "scatter_add", "mask_add", "tape_push",
                       "tape_pop"):
            return False
        if op.prim == "load":
            root = _root(op.operands[0])
            if root in written and root not in covered:
                return False
        for region in op.regions:
            if not _reads_ok(region, set(covered), written):
                return False
        array = covered_array(op)
        if array is not None:
            covered.add(array)
    return True


def body_of(loop):
    """The region a loop's reversed copy reverses (a while loop's body, not its head)."""
    return loop.regions[-1]


def eligible(loop, written):
    """Whether re-running an iteration of `loop` computes what it computed the first time
    (its carried values are scalars and its body reads only what _reads_ok allows)."""
    if any(not isinstance(r.type, T.Scalar) for r in loop.results):
        return False
    return all(_reads_ok(region, set(), written) for region in loop.regions)


# ops whose adjoint does not read this operand's value (a store's value, not its index)
LINEAR = ("add", "sub", "neg", "yield", "cast")


def _needed(v, users):
    """Whether the adjoint would read value v (a pop it would use)."""
    for op in users.get(v, ()):
        if op.prim == "store":
            if any(x is v for x in op.operands[1:-1]):
                return True
        elif op.prim not in LINEAR:
            return True
    return False


def _taped_inside(loop, recomputable, users):
    """How many values of the loops nested in `loop`'s body storing would tape (per inner
    trip): values the adjoint reads and cannot recompute, and carried values it reads."""
    count = 0
    for op in walk(body_of(loop)):
        if op.prim not in _LOOPS:
            continue
        params = [p for region in op.regions for p in region.params[1 if op.prim == "for"
                                                                      else 0:]]
        count += sum(1 for p in params if _needed(p, users))
        for inner in body_of(op).ops:
            if inner.prim in _LOOPS or inner.prim == "const" or recomputable(inner):
                continue
            count += sum(1 for r in inner.results if _needed(r, users))
    return count


def choose(fn, written, recomputable, active):
    """{loop op: (strategy, the comment stating why)} for the loops reverse mode treats per
    iteration: "recompute" runs the iteration again in the reversed loop; "store" saves the
    scratch arrays the iteration leaves (their elements on a tape) and puts them back before
    the iteration's adjoint, which then reloads their elements instead of taping them."""
    chosen = {}
    if not ENABLED:
        return chosen
    _choose_in(fn.body, written, recomputable, chosen, (users(fn), active))
    return chosen


def _depth(block):
    """How deep loops nest inside `block`."""
    return max((int(op.prim in _LOOPS) + max((_depth(r) for r in op.regions), default=0)
                for op in block.ops), default=0)


def _plan(loop, taped):
    """Store vs recompute: a body whose loops nest two deep does work growing faster than
    the 1-d scratch arrays it leaves, so those are stored; otherwise the body is run again."""
    covered = [covered_array(op) for op in body_of(loop).ops]
    if _depth(body_of(loop)) >= 2 and any(a is not None for a in covered):
        return ("store", f"store: the scratch arrays this loop's iterations leave are saved "
                         f"on a tape and put back before each iteration's adjoint, which "
                         f"reloads their elements (taping would push {taped} values per inner "
                         f"trip; recomputing would run the nested loops again)")
    return ("recompute", f"recompute: each iteration of this loop runs its forward part again "
                         f"before its adjoint (storing would tape {taped} values per inner "
                         f"trip; recomputing costs one more run of the body)")


def _choose_in(block, written, recomputable, chosen, facts):
    """Innermost first; returns whether a loop in `block` was chosen. Loops computing no
    active value have no adjoint to checkpoint."""
    users, active = facts
    any_chosen = False
    for op in block.ops:
        inner = False
        for region in op.regions:
            inner |= _choose_in(region, written, recomputable, chosen, facts)
        if op.prim in _LOOPS and not inner and eligible(op, written) and \
                any(r in active for o in walk(body_of(op)) for r in o.results):
            taped = _taped_inside(op, recomputable, users)
            if taped:
                chosen[op] = _plan(op, taped)
                inner = True
        any_chosen |= inner
    return any_chosen


def reloadable_loads(loop, written, loop_writes, loops_around):
    """The scalar loads in a checkpointed loop's body whose value the adjoint can read again
    from memory after the iteration ran again: loads of arrays written in the program, but
    not after the load in the body, nor by a loop around the load inside the body."""
    ops = list(walk(body_of(loop)))
    later_writes = set()
    found = set()
    for op in reversed(ops):
        if op.prim == "store":
            later_writes.add(_root(op.operands[0]))
        if op.prim != "load" or not isinstance(op.results[0].type, T.Scalar):
            continue
        root = _root(op.operands[0])
        if root not in written or root in later_writes:
            continue
        around = loops_around.get(op, ())
        inside = around[around.index(loop) + 1:] if loop in around else ()
        if any(root in loop_writes.get(inner, ()) for inner in inside):
            continue
        found.add(op)
    return found


# -- exit flags of while loops (`break`) ---------------------------------------------------------

def exit_flags(loop):
    """The slots k of a while loop's carried bools that end it (a range loop's `broke` after
    `break`): their initial value is the constant False, the head passes them unchanged to
    the body, and the head's condition is false when they are true. So inside the body the
    flag is False, and the value the body yields for it is true on the loop's last trip at
    most: it is `trip == count - 1 and final` (final: the loop's result for that slot)."""
    head, body = loop.regions
    cond = head.terminator.operands
    found = []
    for k, p in enumerate(head.params):
        if p.type == T.BOOL and _is_false(loop.operands[k]) and cond[1 + k] is p and \
                _implies_not(cond[0], p):
            found.append(k)
    return found


def _is_false(v):
    owner = v.owner
    return owner is not None and owner.prim == "const" and owner.attrs["value"] is False


def _implies_not(v, p, depth=0):
    """Whether bool `v` is certainly false when `p` is true: `not p`, or an `if` each of
    whose branches yields such a value, False, or (else branch) its own condition."""
    owner = v.owner
    if owner is None or depth > 8:
        return False
    if owner.prim == "not":
        return owner.operands[0] is p
    if owner.prim != "if":
        return False
    k = owner.results.index(v)
    then, other = (region.terminator.operands[k] for region in owner.regions)
    return (_is_false(then) or _implies_not(then, p, depth + 1)) and \
        (_is_false(other) or other is owner.operands[0] or _implies_not(other, p, depth + 1))


def recompute_exit_flags(rev, loop, trip, last, inner, scope):
    """Values of `loop`'s exit flags (exit_flags) for the reversed loop, whose variable
    `trip` counts the trips down from `last` (count - 1), instead of taping them: the body's
    flag is False, the flag it yields is `final if trip == last else False`."""
    head, body = loop.regions
    for k in exit_flags(loop):
        if not scope.has(loop.results[k]):
            continue
        inner.values[body.params[k]] = rev.b.const(False, T.BOOL)
        yielded = body.terminator.operands[k]
        if yielded in body.params or yielded.owner is None:
            continue
        on_last = rev.b.value("eq", [trip, last])
        inner.values[yielded] = rev.b.value(
            "select", [on_last, scope.get(loop.results[k]), rev.b.const(False, T.BOOL)],
            name=yielded.name)

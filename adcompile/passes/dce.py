"""Dead code elimination, by marking what is live and sweeping the rest (linear in the size of
the function: one marking pass with a worklist, one sweep).

Live are the operands of effects (stores, tape pushes, asserts, the return, and every op that
can raise: prims.may_raise — an index check, a division by zero of Python numbers — so a
derivative program raises what its function raises), the control operands of every if/for/
while that contains an effect, and, transitively, whatever a live value is computed from. A
pure op with no live result goes away; so does an if/for/while with no live result and no
effect inside (a grad program's forward loop that only computed the value grad() does not
return). A `for` also loses each carried value that is neither live after the loop nor read
inside it by live code (the running sum of a forward loop kept alive by its index checks).

A tape the function makes (`tape_new`) is live when something needs it: a live pop or size,
or any use other than its own pushes, pops and reserves; then all of those are live (its
pops must match its pushes). A tape nobody reads goes away with its pushes, and with them
what only they needed: forward mode over a gradient program tapes a tangent for every taped
value, and the tangents of values the adjoint reads only through `==` (the mask of np.min)
are never popped by live code.
"""

from adcompile.ir.nodes import walk
from adcompile.ir.prims import PRIMS, may_raise

_CONTROL = ("if", "for", "while", "yield", "condition")
_TAPE_OPS = ("tape_push", "tape_pop", "tape_reserve", "tape_size")


def dead_code(fn):
    live = _mark(fn)
    _sweep(fn.body, live)
    return fn


def _is_effect(op):
    return (not PRIMS[op.prim].pure and op.prim not in _CONTROL) or may_raise(op)


class _Marker:
    def __init__(self, fn):
        self.live = set()  # live values, and live control ops
        self.work = []
        self.slot_of = {}  # a value yielded by or carried into a `for` -> (for op, slot)
        self.parent = {}  # op -> the control op whose region holds it
        self.tape_ops = {}  # a tape the function makes -> its pushes, pops, reserves, sizes
        self._index(fn.body, None)

    def _index(self, block, owner):
        for op in block.ops:
            self.parent[op] = owner
            if op.prim != "tape_new" and _own_tape_op(op):
                self.tape_ops.setdefault(op.operands[0], []).append(op)
            for region in op.regions:
                self._index(region, op)
            if op.prim == "for":
                for k, p in enumerate(op.regions[0].params[1:]):
                    self.slot_of[p] = (op, k)

    def value(self, v):
        if v not in self.live:
            self.live.add(v)
            self.work.append(v)

    def op(self, op):
        """`op` is needed: its operands, and the control operands of the ops around it."""
        while op is not None and op not in self.live:
            self.live.add(op)
            if op.prim == "for":
                for v in op.operands[:3]:
                    self.value(v)
            elif op.prim in ("if", "while"):
                self._whole(op)
            elif op.prim != "yield":
                for v in op.operands:
                    self.value(v)
            op = self.parent.get(op)

    def _whole(self, op):
        """if and while keep all their values once live: operands and what regions yield."""
        for v in op.operands:
            self.value(v)
        for r in op.results:
            self.value(r)
        for region in op.regions:
            for v in region.params:
                self.value(v)
            for v in region.terminator.operands:
                self.value(v)

    def slot(self, loop, k):
        """Carried value k of `loop` is needed: its initial value, what the body yields for
        it, its block argument and the loop's result."""
        body = loop.regions[0]
        for v in (loop.operands[3 + k], body.terminator.operands[k], body.params[1 + k],
                  loop.results[k]):
            self.value(v)
        self.op(loop)

    def run(self):
        while self.work:
            v = self.work.pop()
            owner = v.owner
            if v in self.slot_of:
                self.slot(*self.slot_of[v])
            elif owner is not None and owner.prim == "tape_new":
                self.op(owner)
                for op in self.tape_ops.get(v, ()):
                    self.op(op)
            elif owner is not None:
                if owner.prim == "for":
                    self.slot(owner, owner.results.index(v))
                else:
                    self.op(owner)


def _own_tape_op(op):
    """An op on a tape the function made: live only when the tape is (see the docstring)."""
    if op.prim == "tape_new":
        return True
    if op.prim not in _TAPE_OPS:
        return False
    owner = op.operands[0].owner
    return owner is not None and owner.prim == "tape_new"


def _seeds(op):
    """Whether op is live whatever else is: the return and effects, but for tape ops."""
    return op.prim == "return" or (_is_effect(op) and not _own_tape_op(op))


def _mark(fn):
    marker = _Marker(fn)
    for op in walk(fn.body):
        if _seeds(op):
            marker.op(op)
    marker.run()
    return marker.live


def _sweep(block, live):
    kept = []
    for op in block.ops:
        if op.prim in _CONTROL or PRIMS[op.prim].terminator:
            if op.prim == "for" and op in live:
                _drop_dead_slots(op, live)
            if op.prim in ("yield", "condition") or op in live:
                for region in op.regions:
                    _sweep(region, live)
                kept.append(op)
            continue
        if op in live or any(r in live for r in op.results) or _seeds(op):
            kept.append(op)
    block.ops = kept


def _drop_dead_slots(loop, live):
    body = loop.regions[0]
    keep = [k for k, r in enumerate(loop.results) if r in live]
    if len(keep) == len(loop.results):
        return
    yield_op = body.terminator
    loop.operands = loop.operands[:3] + [loop.operands[3 + k] for k in keep]
    body.params = body.params[:1] + [body.params[1 + k] for k in keep]
    yield_op.operands = [yield_op.operands[k] for k in keep]
    loop.results = [loop.results[k] for k in keep]
    if "result_types" in loop.attrs:
        loop.attrs["result_types"] = [loop.attrs["result_types"][k] for k in keep]

"""Which operations may have made an array's memory (an alias question for passes and the
LLVM backend's fusion).

An op that makes a new buffer (`alloc`, an elementwise op, `copy`, a join, `matmul`: FRESH)
returns memory that no other array alive at that moment holds. So two arrays that are both
alive, each of whose memory some FRESH op made, are different memory when no op could have
made both (`distinct`). An array's makers (`makers`) are found through views
(`memory_root`), through `sum_to` (which returns its operand when that has the shape
already), and through the slots of counted loops: a loop's body parameter and its
result hold what the loop started with or what an iteration yielded (a reverse-mode loop's
carried shadow `y_bar`, zero-filled before the loop and a new array each trip). Anything
else (an argument, a tape's item, a branch's merge, a tuple's item) may be any memory.
"""

from adcompile.ir.nodes import memory_root, walk
from adcompile.ir.prims import ELEMENTWISE

FRESH = frozenset(ELEMENTWISE) | {"alloc", "copy", "concatenate", "stack", "matmul"}


class Origins:
    """The makers of arrays in one function (`fn`'s loops are indexed once)."""

    def __init__(self, fn):
        self.slots = {}  # a loop's body parameter or result -> (loop, carried index)
        self.loops = {}  # an op -> the `for` loops whose bodies hold it
        for op in walk(fn.body):
            if op.prim != "for":
                continue
            for k, p in enumerate(op.regions[0].params[1:]):
                self.slots[p] = (op, k)
            for k, r in enumerate(op.results):
                self.slots[r] = (op, k)
            for inner in walk(op.regions[0]):
                self.loops.setdefault(inner, set()).add(op)
        self.known = {}

    def makers(self, array):
        """The FRESH ops one of which made array's memory, or None when it may be any."""
        root = memory_root(array)
        if root not in self.known:
            self.known[root] = None  # a loop's slot that reaches itself: any memory
            self.known[root] = self._makers(root)
        return self.known[root]

    def _makers(self, root):
        owner = root.owner
        if owner is not None and owner.prim in FRESH:
            return frozenset([owner])
        if owner is not None and owner.prim == "sum_to":  # its operand itself, or new
            found = self.makers(owner.operands[0])
            return None if found is None else found | {owner}
        if root not in self.slots:
            return None
        loop, k = self.slots[root]
        start = self.makers(loop.operands[3 + k])
        step = self.makers(loop.regions[0].terminator.operands[k])
        if start is None or step is None:
            return None
        return start | step

    def distinct(self, a, b):
        """Whether arrays a and b, both alive, are certainly different memory: no op made
        both, or the one that did made one of them in this trip of a loop whose body
        parameter holds the other (what an earlier trip, or the loop's start, made)."""
        ra, rb = memory_root(a), memory_root(b)
        if ra is rb:
            return False
        ma, mb = self.makers(ra), self.makers(rb)
        if ma is None or mb is None:
            return False
        return all(self._this_trip(ra, rb, m) or self._this_trip(rb, ra, m) for m in ma & mb)

    def apart(self, a, b, params):
        """Whether arrays a and b, both alive, are certainly different memory: `distinct`,
        apart by what holds them (_held_apart), or a new buffer and an argument (`params`:
        the function's)."""
        ra, rb = memory_root(a), memory_root(b)
        if ra is rb:
            return False
        if self.distinct(ra, rb) or _held_apart(ra, rb, params):
            return True
        return (made_new(ra) and rb in params) or (made_new(rb) and ra in params)

    def _this_trip(self, made, slot, maker):
        """Whether `made` is maker's result in a trip of the loop whose body parameter is
        `slot` (so made after the trip began, and slot holds an array made before)."""
        if made.owner is not maker or slot not in self.slots:
            return False
        loop, _ = self.slots[slot]
        return slot in loop.regions[0].params and loop in self.loops.get(maker, ())


def made_new(root):
    """Whether a FRESH op of the function made root (never an argument's memory)."""
    return root.owner is not None and root.owner.prim in FRESH


def holds(root):
    """"shadows of f" or "values of f" for a shadow array the reverse mode of f made, or an
    array popped off a tape it made for shadow arrays or for values of f (the two kinds
    never share memory: shadows are made by that reverse mode itself), else None."""
    owner = root.owner
    if owner is not None and owner.prim == "alloc":
        return owner.attrs.get("holds")
    if owner is None or owner.prim != "tape_pop":
        return None
    tape = owner.operands[0].owner
    return tape.attrs.get("holds") if tape is not None and tape.prim == "tape_new" else None


def _held_apart(a, b, params):
    """Whether the arrays rooted at a and b are apart by what holds them: a shadow and a
    value of one reverse mode, or a shadow and an argument (`params`: the function's)."""
    kinds = {holds(a), holds(b)}
    if None not in kinds and len(kinds) == 2 and len({k.split(" of ")[1] for k in kinds}) == 1:
        return True
    return any(k is not None and k.startswith("shadows") for k in kinds) and \
        (a in params or b in params)  # (a shadow is never an argument)

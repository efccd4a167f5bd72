"""Which arrays of a program share memory through a tape: what reverse mode needs to
differentiate a reverse-mode program again (grad of grad, the pullback of a pullback).

A reverse-mode program keeps arrays on tapes (ir/tape.py keeps the array itself, not a
copy), so an array popped from a tape *is* the array pushed: a write through one is a write
into the other. Its adjoint sweep does exactly that: it pops the shadow arrays its forward
sweep pushed and accumulates into them, and the same memory is often reached by several
names (one iteration's result is the next iteration's parameter; the array a `while` loop
returns is its last iteration's, pushed on a tape and popped again; the seed `add_at` writes
into the loop's result before the adjoint loop reads it as a popped item). `memory_root`
follows views only, so reverse mode would see unrelated arrays and lose the derivatives that
flow through that memory.

`TapeAliases` groups the arrays of a function into classes that may share memory (a
union-find over views, loop-carried and if-merged slots, and tape pushes and pops: every
item of one tape is in the tape's class) and keeps the classes that hold a tape and are
written somewhere. Reverse mode then treats such a tape as memory (`memory_tapes`): the
forward sweep pushes each item's shadow on a parallel tape and pops it with the item, so the
shadows alias exactly as the arrays do and contributions reach every name of the memory
without adjoint code for the push and the pop; and a write through any member counts as a
write into all of them (`expand`: activity, snapshots, what may be reloaded).

User programs meet the same sharing without tapes: `a = h[i]` carried by a loop to its next
trip, or merged by a branch, is memory of `h`, which the loop writes again. `memory_root`
cannot follow a loop slot or a branch, so a written class with such a slot is kept too:
every member's contents then count as written, and an adjoint reading `a` gets a snapshot
of its own time instead of the contents the last trip left.
"""

from adcompile.ir import types as T
from adcompile.ir.nodes import WRITES, memory_root, region_slots, walk

_VIEWS = ("load", "slice", "transpose", "diagonal")


class TapeAliases:
    def __init__(self, fn):
        self.parent = {}
        merged = set()  # arrays carried by a loop or merged by a branch
        for op in walk(fn.body):
            for group in _sharing(op):
                self.union(group)
            for group in region_slots(op):
                merged.update(group)
        written = {self.find(op.operands[0]) for op in walk(fn.body) if op.prim in WRITES}
        classes = {}
        for v in list(self.parent):
            classes.setdefault(self.find(v), []).append(v)
        # member -> the members of its class: written classes with a tape, or with an array
        # a loop carries or a branch merges (`a = h[i]` carried to the next trip, h written)
        self.classes = {}
        for root, members in classes.items():
            if root in written and any(isinstance(m.type, T.Tape) or m in merged
                                       for m in members):
                for m in members:
                    self.classes[m] = members
        self.memory_tapes = {m for m in self.classes if isinstance(m.type, T.Tape)}

    def find(self, v):
        parent = self.parent.setdefault(v, v)
        while parent is not v:
            grand = self.parent[parent]
            self.parent[v] = grand
            v, parent = parent, grand
        return v

    def union(self, values):
        roots = [self.find(v) for v in values]
        for r in roots[1:]:
            self.parent[r] = roots[0]

    def members(self, v):
        """The values that may share memory with array (or tape) `v` through a tape: its
        class, or just `v`."""
        return self.classes.get(v, (v,))

    def expand(self, roots):
        """`roots` (memory roots of written arrays) with the roots of every array sharing
        memory with one of them through a tape."""
        out = set(roots)
        for r in roots:
            out.update(memory_root(m) for m in self.classes.get(r, ())
                       if not isinstance(m.type, T.Tape))
        return out


def _sharing(op):
    """Groups of values that `op` makes share memory (each group at least one array)."""
    if op.prim in _VIEWS and op.results and isinstance(op.results[0].type, T.Array):
        return [(op.results[0], op.operands[0])]
    if op.prim == "tape_push" and isinstance(op.operands[1].type, T.Array):
        return [tuple(op.operands)]
    if op.prim == "tape_pop" and isinstance(op.results[0].type, T.Array):
        return [(op.operands[0], op.results[0])]
    return [g for g in region_slots(op) if isinstance(g[0].type, T.Array)]

"""Reverse mode (VJP) as an IR -> IR transform.

The new function takes the primal arguments and the output cotangent and returns
`(result, (grad_0, grad_1, ...))` for the differentiated arguments. Its body is the primal
program (the augmented forward pass) followed by the adjoint program, which walks the primal
ops backwards:

- top-level values are visible to the adjoint code directly; a value defined inside a loop or
  branch that the adjoint code needs is pushed on its own tape when computed and popped when
  the adjoint of its region runs (tapes are typed, growable buffers: O(N) words for N pushes);
- an `if` is reversed by an `if` on the same condition; a `for` by a loop over the same range,
  whose body pops the iteration's values; a `while` counts its iterations and is reversed by a
  counted loop;
- the adjoints of scalars defined outside a region and used inside it are carried through the
  reversed region (yielded out of ifs, carried by loops); arrays have shadow arrays updated in
  place (`v = a[i]` -> `a_bar[i] += v_bar`; `a[i] = v` -> `v_bar += a_bar[i]; a_bar[i] = 0`).

The derivative of each primitive comes from runtime/rules through the IR ops namespace.
"""

import bisect

from adcompile.ad import checkpoint, inplace
from adcompile.ad.aliases import TapeAliases
from adcompile.ad.adjoints import (ADJOINTS, QUOTIENT, ZERO_DERIVATIVE,
                                   FLOAT_OPERANDS, float_operands, quotient_args)
from adcompile.ad.ir_ops import IROps
from adcompile.errors import ArgumentError, CompileError
from adcompile.ir import types as T
from adcompile.ir.builder import IRBuilder
from adcompile.ir.nodes import Block, Function, Op, Value, export_from_if, walk, walk_op
from adcompile.ir.nodes import MEMORY_VIEWS, memory_root as _root, region_slots, users
from adcompile.ir.prims import ELEMENTWISE, PRIMS
from adcompile.passes.dce import dead_code
from adcompile.passes.simplify import constant_fold
from runtime.rules import RULES

_TERMINATORS = ("yield", "condition", "return")
# pure and cheap: the adjoint recomputes these from popped values instead of taping them
# elementwise ops recomputed on whole arrays rather than taped (see recomputable)
_CHEAP_ON_ARRAYS = {"add", "sub", "mul", "neg", "abs", "select", "maximum", "minimum", "eq",
                    "ne", "lt", "le", "gt", "ge", "cast", "pow"}
_RECOMPUTE = {"add", "sub", "mul", "div", "neg", "floordiv", "mod", "eq", "ne", "lt", "le",
              "gt", "ge", "not", "truth", "cast", "shape", "size", "select", "and", "abs",
              "sign", "min", "max", "maximum", "minimum", "copysign",
              # elementary functions: recomputing one costs about what a tape round trip
              # does, and a loop whose adjoint needs no tape can be fused or dropped
              "sqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "floor", "ceil",
              "trunc", "round"}

# calls that make filling a scratch array again cost more than saving it (cheap_cover)
_LIBM = ("exp", "log", "log1p", "expm1", "sin", "cos", "tanh")

# the shapes of reverse-mode program: (takes a cotangent, returns the result too)
MODES = {"vjp": (True, True), "value_and_grad": (False, True), "grad": (False, False),
         "pullback": (True, False), "split": (True, True)}


# array ops whose adjoint reads their result (a copy is taken when it is written later)
_READS_RESULT = frozenset(["tan", "exp", "sqrt", "tanh", "expm1", "pow", "hypot", "copysign",
                           "prod", "amax", "amin", "det", "inv", "cofactor", "solve"])
_OLD_VALUE = ("the derivative of this in-place update needs the array's value before it, and "
              "this function could not be rewritten to keep it; write x = x * v")


def vjp_function(fn, active, mode="vjp"):
    """The reverse-mode program of `fn`, in one of the MODES:
    - "vjp": (args..., out_bar) -> (result, grads), for any output cotangent;
    - "value_and_grad": (args...) -> (result, grads), the cotangent fixed at 1 so the adjoint
      code has no seed to multiply by;
    - "grad": (args...) -> grads, cotangent 1: the `grad` of a scalar function, as an
      ordinary IR function that other transforms can differentiate again;
    - "pullback": (args..., out_bar) -> grads, the vjp without its value (the backward of a
      compiled node of the eager graph, itself differentiable again);
    - "split": the vjp program cut into (augmented forward, reverse) functions (ad/split.py),
      or None when a tape would cross the cut."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {tuple(MODES)}, not {mode!r}")
    rewritten = inplace.positions(fn, _Reverse(fn, active, mode).needs_old_value())
    return _Reverse(inplace.assign_form(fn, rewritten) or fn, active, mode).run()


def _forget_loop_params(fn):
    """Drop fn's loops from _LOOP_PARAMS: the shape analysis is done with this function."""
    for op in walk(fn.body):
        if op.prim == "for":
            for p in op.regions[0].params:
                _LOOP_PARAMS.pop(p, None)


def _float_tuple(t):
    """A tuple holding a float (at any depth): it may carry a derivative."""
    return isinstance(t, T.Tuple) and any(_float(i) or _float_tuple(i) for i in t.items)


def _float(type):
    return isinstance(type, (T.Scalar, T.Array)) and type.dtype in ("f32", "f64")


class _Reverse:
    def __init__(self, fn, active, mode="vjp"):
        self.mode = mode
        self.fn = fn
        self.active_params = active
        self.b = IRBuilder()
        self.ops = IROps(self.b)
        self.val = {}        # primal value -> its clone in the forward pass
        self.shadow = {}     # primal array value -> shadow array (forward value)
        self.tapes = {}      # primal value -> tape (for values defined inside regions)
        self.tape_ops = []
        self.shadow_tapes = set()  # tapes of shadow arrays (the reverse writes into items)
        self.shadow_allocs = set()  # the zero-filled allocations made as shadow arrays
        self.depth = 0
        self.active = set()
        self.counts = {}     # primal while op -> its iteration count value (primal-side)
        self.top_loop = None  # the top-level for loop being copied (its tapes get reserved)
        self.clones = {}     # primal region op -> its copy in the forward pass
        self.fusable = []    # (forward loop, its reversed loop) candidates for _fuse_loops
        self.top_loop_tapes = []  # (tape, the loops inside the top loop around its push)
        self.loop_nest = []  # the primal loops being copied, outermost first
        self.uses = {}       # primal region op -> the values it uses (_uses)
        self.plain = 0       # > 0 while copying a checkpointed loop's body: nothing taped

    # -- driver -----------------------------------------------------------------------------
    def needs_old_value(self):
        """A predicate on fn's ops: an in-place update whose adjoint needs the array's old
        value (ad/inplace.py), by this transform's activity analysis."""
        self.active = {p for p, on in zip(self.fn.params, self.active_params)
                       if on and (_float(p.type) or _float_tuple(p.type))}
        self.aliases = TapeAliases(self.fn)
        self._activity(prune=False)
        return lambda op: inplace.needs_old_value(op, self.active)

    def run(self):
        fn = self.fn
        params = [Value(p.type, p.name) for p in fn.params]
        for old, new, on in zip(fn.params, params, self.active_params):
            self.val[old] = new
            if on:
                if not _float(old.type):
                    raise ArgumentError(f"cannot differentiate with respect to '{old.name}', "
                                        f"a {old.type}: only float scalars and arrays have "
                                        f"gradients")
                self.active.add(old)
        # arrays sharing memory through tapes (a reverse-mode program differentiated again)
        self.aliases = TapeAliases(fn)
        self._activity()
        self._refuse_merged_tuples()  # after activity: tuples merged by control flow
        # arrays nothing writes into: the adjoint reloads their elements instead of taping
        self.functional, self.functional_slots = _functional_arrays(fn, self.active,
                                                                    self.aliases)
        for op in walk(fn.body):
            if op.prim == "for":
                body = op.regions[0]
                for p, init, y in zip(body.params[1:], op.operands[3:],
                                      body.terminator.operands):
                    if isinstance(p.type, T.Array):
                        _LOOP_PARAMS[p] = (init, y)
        self.array_adj = {}  # functional array -> its adjoint so far (an array value)
        self.written = self.aliases.expand(
            {_root(op.operands[0]) for op in walk(fn.body) if op.prim in _WRITES})
        # arrays made inside a loop or branch whose shadows the reversed region allocates
        # (see forward_shadow), and views of them
        reach = _Reach(fn, self.written, self.aliases.classes)
        self.local = _local_arrays(fn, reach)
        self.late = set()
        self.snapshots = {}  # (array op, operand index) -> copy taken before later writes
        # roots of the arrays written inside each loop, and the loops around each op: an
        # array op in a loop reading an array the loop writes reads other contents on each
        # trip, so its adjoint needs the contents of each trip (a copy on a tape)
        self.loop_writes, self.loops_around = {}, {}
        self._find_loops(fn.body, ())
        self.walked = list(walk(fn.body))
        self.order = {op: k for k, op in enumerate(self.walked)}
        self._refuse_reshapes_of_written_memory()
        # loops whose reversed copies run each iteration again (see checkpoint.py), and the
        # loads of scratch arrays their adjoints read again from memory
        self.users = users(fn)
        self.reloadable, self.scratch = set(), {}
        self.rebuilt = {}  # "store" loop -> covering loops the adjoint runs again instead
        # checkpoint.choose asks `recomputable`, which reads the taping loops; those depend on
        # the checkpoints, so while choosing them no loop counts as taping
        self.taping_loops = set()
        # a split program's reverse half runs at backward, apart from its forward: running
        # an iteration again there would be recomputing the primal, so it tapes instead
        self.checkpoints = {} if self.mode == "split" else \
            checkpoint.choose(fn, self.written, self.recomputable, self.active)
        self.taping_loops = self._taping_loops()
        self.late_slots = set() if self.mode == "split" else {
            (loop, k) for loop, k in _late_slots(fn, reach, self.functional_slots)
            if loop not in self.checkpoints and loop.results[k] in self.active and
            _float(loop.results[k].type)}
        self.late_yields = {slot[0].regions[0].terminator.operands[slot[1]]
                            for slot in self.late_slots}
        for loop, (strategy, _) in self.checkpoints.items():
            loads = checkpoint.reloadable_loads(loop, self.written, self.loop_writes,
                                                self.loops_around)
            self.reloadable |= loads
            if strategy == "store":  # the arrays to save, in program order
                roots = {_root(o.operands[0]) for o in loads}
                self.rebuilt[loop] = [c for c in checkpoint.body_of(loop).ops
                                      if self.cheap_cover(loop, c, roots)]
                roots -= {checkpoint.covered_array(c) for c in self.rebuilt[loop]}
                self.scratch[loop] = sorted(roots, key=lambda r: self.order.get(r.owner, -1))
        self.last_write = {}  # array root -> the position of the last op writing into it
        for op in walk(fn.body):
            if op.prim in _WRITES:
                for root in self.aliases.expand({_root(op.operands[0])}):
                    self.last_write[root] = self.order[op]
            for region in op.regions:  # a loop may write again after a later op read
                for inner in walk(region):
                    if inner.prim in _WRITES:
                        for root in self.aliases.expand({_root(inner.operands[0])}):
                            self.last_write[root] = max(self.last_write.get(root, 0),
                                                        self.order[op] + len(self.order))
        ret = fn.body.terminator
        if not ret.operands:
            raise ArgumentError("the function returns nothing, so it has no gradient")
        out = ret.operands[0]
        body = Block()
        self.b.block = body
        takes_cotangent, with_value = MODES[self.mode]
        if takes_cotangent:
            cot = Value(out.type, "out_bar")
        else:
            if not (isinstance(out.type, T.Scalar) and out.type.is_float):
                raise ArgumentError(f"{self.mode}() needs a function returning a float scalar, "
                                f"but {fn.name} returns a {out.type}; use vjp() or "
                                f"jacobian() for other results")
            cot = self.b.const(1.0, out.type, name="out_bar")
        self._shadows_for_params()
        self.forward(fn.body)
        forward_ids = {id(op) for op in body.ops + self.tape_ops}  # (for the "split" mode)
        adj = {}
        self.seed(out, cot, adj)
        scope = _Scope(None, self.val)
        self.reverse(fn.body, adj, scope)
        grads = []
        for old, on in zip(fn.params, self.active_params):
            if on:
                grads.append(self.array_gradient(old) if isinstance(old.type, T.Array)
                             else self.value_or_zero(adj.get(old), old.type))
        result = self.val[out]
        if with_value:
            pair = self.b.value("tuple", (result, self.b.value("tuple", grads)))
        else:
            pair = grads[0] if len(grads) == 1 else self.b.value("tuple", grads)
        name = f"{fn.name}_{self.mode}"
        extra = [cot] if takes_cotangent else []
        self.b.emit("return", [pair], {"type": pair.type})
        body.ops[0:0] = self.tape_ops
        result = Function(name, params + extra, body, fn.filename, fn.first_line)
        while _prune_tapes(body):  # dropping a tape can leave dead code using other pops
            dead_code(result)
        dead_code(result)
        if self.mode == "split":
            from adcompile.ad.split import split

            _forget_loop_params(fn)
            shadows = set(self.shadow.values()) | self.shadow_tapes
            return split(result, forward_ids, shadows, self.shadow_allocs)
        constant_fold(result)  # e.g. adjoints passed unchanged through branches
        if _forward_tapes(body, _fuse_loops(body, self.fusable)):
            while _prune_tapes(body):
                dead_code(result)
        _forget_loop_params(fn)
        return result

    def array_gradient(self, p):
        """An array argument's gradient: its shadow, or its functional adjoint as a new array
        the caller owns (zeros when nothing reached it)."""
        if p not in self.functional:
            return self.shadow[p]
        g = self.array_adj.get(p)
        if g is None:
            return self.zeros_like(self.val[p], f"{p.name}_bar")
        if g.owner is None or g.owner.prim in _VIEWS + ("broadcast_to", "load", "for", "if",
                                                        "while"):
            g = self.b.value("copy", (g,), name=f"{p.name}_bar")  # (may be a view: ours)
        if p.type.dtype != g.type.dtype:
            g = self.b.value("cast", (g,), {"to": T.Scalar(p.type.dtype)})
        return g

    def seed(self, out, cot, adj):
        if isinstance(out.type, T.Array) and out in self.functional:
            self.array_adj[out] = cot
            return
        if isinstance(out.type, T.Array):
            if out in self.shadow:
                self.b.emit("add_at", [self.shadow[out], cot])
            return
        if isinstance(out.type, T.Tuple):
            adj[out] = cot
            return
        adj[out] = cot

    # -- activity ---------------------------------------------------------------------------
    def _refuse_merged_tuples(self):
        """An if/for/while merging a tuple that depends on a differentiated argument (a tuple
        returned from several places) has no adjoint yet: refuse it, located, rather than
        lose its gradient."""
        for op in walk(self.fn.body):
            if op.prim in ("if", "for", "while") and any(
                    isinstance(r.type, T.Tuple) and r in self.active for r in op.results):
                raise CompileError.at(op.loc, "reverse mode does not differentiate a tuple "
                                      "returned from several places (or carried by a loop) "
                                      "yet; return a single value, or assign the items to "
                                      "variables and return the tuple once at the end")

    def _refuse_reshapes_of_written_memory(self):
        """A reshape is a view of its operand's memory only when the layout allows one, so its
        shadow is an array of its own and its adjoint flows back into the operand where the
        reshape stands. A write through an active reshape, and an active reshape read after
        a write into its operand's memory (a view, it sees the write, but its contribution
        would reach the contents before it), are refused, located, rather than given a wrong
        gradient."""
        uses = {}
        for op in self.walked:
            for v in op.operands:
                uses.setdefault(v, []).append(op)
            if op.prim in _WRITES and _through_reshape(op.operands[0]) and \
                    (op.operands[-1] in self.active or _root(op.operands[0]) in self.active):
                raise CompileError.at(op.loc, "reverse mode does not differentiate writing "
                                      "through a reshape of an array yet; write into the "
                                      "array itself")
        for op in self.walked:
            if op.prim != "reshape" or op.results[0] not in self.active or \
                    not isinstance(op.operands[0].type, T.Array):
                continue
            memory = self.aliases.expand({_root(op.operands[0])})
            after = [w for w in self.walked[self.order[op] + 1:]
                     if w.prim in _WRITES and
                     self.aliases.expand({_root(w.operands[0])}) & memory]
            if not after:
                continue
            first = self.order[after[0]]
            # a loop around a write but not the reshape repeats the write before later reads
            looping = {loop for w in after for loop in self.loops_around[w]} - \
                set(self.loops_around[op])
            readers, seen = [op.results[0]], set()
            while readers:
                v = readers.pop()
                for user in uses.get(v, ()):
                    if user in seen:
                        continue
                    seen.add(user)
                    if user.prim in MEMORY_VIEWS and user.results:
                        readers.append(user.results[0])
                    elif self.order[user] > first or looping & set(self.loops_around[user]):
                        raise CompileError.at(
                            user.loc, "reverse mode does not differentiate reading a "
                            "reshape of an array after writing into that array yet; take "
                            "the reshape after the write")

    def _activity(self, prune=True):
        """Values that depend on a differentiated argument (a fixed point over loops) and,
        for scalars, reach the output through differentiable operations: a value only
        compared (`if x ** 0.5 > 1:`) gets no adjoint, whose zero would otherwise meet the
        partial derivative (nan at x < 0) in a product. So does an array an op without
        regions made (and its views) when nothing that reaches the output is its memory
        and nothing writes into it (a write's adjoint reads the destination's shadow):
        `np.sum(x[np.arcsin(x) >= 0])` inside a branch compared arcsin(x) only, and its
        zero adjoint met arcsin's partial derivative (nan for |x| > 1). `prune=False`:
        every value that depends on one."""
        changed = True
        while changed:
            changed = False
            for op in walk(self.fn.body):
                changed |= self._propagate(op)
        if not prune:
            return
        useful, unread = _reaching_the_output(self.fn)
        kept = set(self.fn.params)
        kept.update(_root(op.operands[0]) for op in walk(self.fn.body) if op.prim in _WRITES)

        def dropped(v):
            if isinstance(v.type, T.Scalar):
                return True
            root = _root(v) if isinstance(v.type, T.Array) else None
            return root is not None and root not in kept and unread(root)

        self.active = {v for v in self.active if v in useful or not dropped(v)}

    def _propagate(self, op):
        changed = False
        if op.prim in ("tape_push", "add_at"):  # values flowing into a tape or an array
            target, value = op.operands[0], op.operands[-1]
            return value in self.active and self._activate_memory(target)
        if op.prim == "tape_pop":
            r = op.results[0]
            if op.operands[0] in self.active and _float(r.type) and r not in self.active:
                self.active.add(r)
                changed = True
            return changed
        if op.prim in ("store", "assign", "iadd", "scatter_add", "mask_add"):
            array, value = op.operands[0], op.operands[-1]
            return value in self.active and self._activate_memory(array)
        sources = [v for v in op.operands if v in self.active]
        if op.prim == "load" and _root(op.operands[0]) in self.active:
            sources.append(op.operands[0])
        if op.prim in ("for", "while", "if"):
            changed |= self._propagate_region(op)
        if not sources:
            return changed
        if op.prim in ZERO_DERIVATIVE or op.prim in ("eq", "ne", "lt", "le", "gt", "ge",
                                                      "not", "truth", "shape", "size"):
            return changed
        for r in op.results:
            if (_float(r.type) or _float_tuple(r.type)) and r not in self.active:
                self.active.add(r)
                changed = True
        return changed

    def _activate_memory(self, target):
        """An active value was written into `target`: its memory root is active, and so is
        every array or tape sharing that memory through a tape (aliases.py)."""
        root = _root(target)
        new = [root] if root not in self.active else []
        new += [m for m in self.aliases.members(root) if m not in self.active and m is not root
                and (isinstance(m.type, T.Tape) or _float(m.type))]
        self.active.update(new)
        return bool(new)

    def _propagate_region(self, op):
        changed = False
        regions = op.regions
        if op.prim == "for":
            pairs = [(op.operands[3 + k], regions[0].params[1 + k],
                      regions[0].terminator.operands[k], op.results[k])
                     for k in range(len(op.results))]
        elif op.prim == "while":
            head, body = regions
            passed = head.terminator.operands[1:]
            pairs = [(op.operands[k], head.params[k], body.terminator.operands[k],
                      op.results[k]) for k in range(len(op.results))]
            pairs += [(passed[k], body.params[k], passed[k], op.results[k])
                      for k in range(len(op.results))]
        else:
            pairs = [(y[k], op.results[k], None, None) for region in regions
                     for y in [region.terminator.operands] for k in range(len(op.results))]
        for src, param, yielded, result in pairs:
            on = src in self.active or (yielded is not None and yielded in self.active)
            for v in (param, result):
                if on and v is not None and v not in self.active and \
                        (_float(v.type) or _float_tuple(v.type)):
                    self.active.add(v)
                    changed = True
        return changed

    # -- forward pass -----------------------------------------------------------------------
    def _shadows_for_params(self):
        writes = {}
        for op in walk(self.fn.body):
            if op.prim in _WRITES:
                writes.setdefault(_root(op.operands[0]), op)
        for p, on in zip(self.fn.params, self.active_params):
            if on and p in writes:
                op = writes[p]
                through = " (through a view of it)" if op.operands[0] is not p else ""
                raise CompileError.at(op.loc, f"the function writes into '{p.name}'{through}, "
                                      f"an argument being differentiated; differentiate a "
                                      f"version that writes into a new array "
                                      f"(np.empty_like({p.name}) or {p.name}.copy())")
            if isinstance(p.type, T.Array) and _float(p.type) and (on or p in self.active) \
                    and p not in self.functional:
                self.shadow[p] = self.zeros_like(self.val[p], f"{p.name}_bar")

    def zeros_like(self, array, name):
        dims = [self.b.value("shape", (array,), {"axis": i}) for i in range(array.type.ndim)]
        return self.zeros(dims, array.type, name)

    def zeros(self, dims, type, name):
        """A new shadow array of zeros (marked as one: see tape_for; recorded for split)."""
        shadow = self.b.value("alloc", dims, {"dtype": type.dtype, "ndim": type.ndim, "fill": 0,
                                              "holds": f"shadows of {self.fn.name}"}, name=name)
        self.shadow_allocs.add(shadow.owner)
        return shadow

    def forward(self, block):
        for op in block.ops[:-1]:
            self.forward_op(op)

    def forward_op(self, op):
        if op.prim in ("if", "for", "while"):
            return self.forward_region_op(op)
        new = self.b.emit(op.prim, [self.val[v] for v in op.operands], op.attrs,
                          names=[r.name for r in op.results], loc=op.loc,
                          result_types=[r.type for r in op.results])
        for old, r in zip(op.results, new.results):
            self.val[old] = r
        self.snapshot(op)
        self.forward_shadow(op)
        for old in op.results:
            self.remember(old)

    def _find_loops(self, block, around):
        for op in block.ops:
            self.loops_around[op] = around
            if op.prim in ("for", "while"):
                self.loop_writes[op] = self.aliases.expand(
                    {_root(o.operands[0]) for region in op.regions for o in walk(region)
                     if o.prim in _WRITES})
            inner = around + (op,) if op.prim in ("for", "while") else around
            for region in op.regions:
                self._find_loops(region, inner)

    def snapshot(self, op):
        """An array op whose adjoint reads an array that is written later, or written by a
        loop around it (on another trip), gets a copy of it now: the adjoint runs after the
        writes. Inside a loop the copy of each trip goes on a tape."""
        if not op.results or op.results[0] not in self.active or op.prim in _VIEWS or \
                op.prim in _WRITES or op.prim in ("load", "shape", "size", "alloc"):
            return  # element loads are taped or reloaded as they always were
        for k, v in enumerate(op.operands):
            if not isinstance(v.type, T.Array) or not self.written_after(op, _root(v)):
                continue
            self.save_copy(op, k, v)
        r = op.results[0]
        if op.prim in _READS_RESULT and isinstance(r.type, T.Array) and \
                self.written_after(op, r):
            self.save_copy(op, -1, r)  # (k = -1: the result, which its adjoint reads)

    def written_after(self, op, root):
        """Whether memory of `root` is written after `op`, or by a loop around it."""
        return self.last_write.get(root, -1) > self.order.get(op, -1) or any(
            root in self.loop_writes[loop] for loop in self.loops_around.get(op, ()))

    def save_copy(self, op, k, v):
        saved = self.b.value("copy", (self.val[v],), name=f"{v.name or 'a'}_saved")
        if self.depth > 0:
            self.b.emit("tape_push", [self.tape_for(("snapshot", op, k), v.type), saved])
        else:
            self.snapshots[(op, k)] = saved

    def forward_shadow(self, op):
        """Shadow arrays follow their primal: allocations and views of shadowed arrays."""
        if op.prim in _TAPE_OPS and self.memory_tape_shadow(op):
            return
        if op.prim == "alloc" and op.results[0] in self.active:
            r = op.results[0]
            ndim = op.attrs["ndim"]
            dims = [self.val[v] for v in op.operands[:ndim]]
            self.shadow[r] = self.zeros(dims, r.type, f"{r.name or 'a'}_bar")
        elif op.prim in _VIEWS + ("load",) and isinstance(op.results[0].type, T.Array):
            if op.operands[0] in self.shadow:  # a view's shadow: the same view of the shadow
                r = op.results[0]
                rest = [self.val[v] for v in op.operands[1:]]
                self.shadow[r] = self.b.value(op.prim, [self.shadow[op.operands[0]]] + rest,
                                              op.attrs, name=f"{r.name or 'a'}_bar")
            elif op.operands[0] in self.late or op.operands[0] in self.late_yields:
                self.late.add(op.results[0])  # (made when its base's shadow is: late_shadow)
        elif op.results and isinstance(op.results[0].type, T.Array) and \
                op.results[0] in self.active and _float(op.results[0].type) and \
                op.results[0] not in self.functional:
            r = op.results[0]  # a new array: its adjoint accumulates in a new shadow array
            if r in self.late_yields:
                return  # (the reversed loop carries its shadow: _late_slots)
            if self.depth > 0 and not self.plain and r in self.local:
                self.late_shape(r)
                return
            self.shadow[r] = self.zeros_like(self.val[r], f"{r.name or 't'}_bar")

    def late_shape(self, r):
        """A new array made inside a region that its iteration alone uses (_local_arrays):
        its shadow is not made here and taped, but made by the reversed region, zero, before
        the contributions of the uses reach it (pop_region). Its shape goes on tapes of ints
        in case its value is not at hand there."""
        self.late.add(r)
        for i in range(r.type.ndim):
            n = self.b.value("shape", (self.val[r],), {"axis": i})
            self.b.emit("tape_push", [self.tape_for(("late", r, i), T.INT, "n"), n])

    def memory_tape_shadow(self, op):
        """A tape of arrays that share memory with written ones (aliases.py) gets a tape of
        their shadows beside it, pushed and popped with it: a popped item's shadow is then
        the pushed item's, and the shadows alias as the arrays do (the push and the pop need
        no adjoint code). Whether `op` was such a tape's op."""
        tape = op.results[0] if op.prim == "tape_new" else op.operands[0]
        if tape not in self.aliases.memory_tapes or tape not in self.active:
            return False
        name = f"{tape.name or 'v'}_bar"
        if op.prim == "tape_new":
            attrs = {k: v for k, v in op.attrs.items() if k != "holds"}
            self.shadow[tape] = self.b.emit("tape_new", [], attrs, names=[name],
                                            result_types=[tape.type]).result
        elif op.prim == "tape_push":
            self.b.emit("tape_push", [self.shadow[tape], self.shadow_or_zeros(op.operands[1])])
        elif op.prim == "tape_pop":
            r = op.results[0]
            self.shadow[r] = self.b.value("tape_pop", (self.shadow[tape],),
                                          name=f"{r.name or 'a'}_bar")
        else:  # tape_reserve
            self.b.emit(op.prim, [self.shadow[tape]] + [self.val[v] for v in op.operands[1:]])
        return True

    def remember(self, old):
        """Push a value computed inside a region so its region's adjoint can pop it
        (constants are re-created instead)."""
        if self.depth == 0 or self.plain or \
                isinstance(old.type, (T.Tuple, T.Tape, T.NoneType)):
            return
        if old.owner is not None and old.owner.prim == "const":
            return
        tape = self.tape_for(old)
        self.b.emit("tape_push", [tape, self.val[old]])
        if old in self.shadow:
            shadow_tape = self.tape_for(("shadow", old), old.type)
            self.b.emit("tape_push", [shadow_tape, self.shadow[old]])

    def tape_for(self, key, type=None, name=None, length=None):
        """The tape of `key`, made on first use; `length`: a 1-d array whose length is the
        number of pushes per iteration of the loops around them (a saved scratch array)."""
        tape = self.tapes.get(key)
        if tape is None:
            type = type or key.type
            item = type.dtype if isinstance(type, T.Scalar) else "object"
            name = name or getattr(key, 'name', None) or 'v'
            attrs = {"item": item, "item_type": type}
            if item == "object":  # the LLVM backend's fusion: these never share memory
                kind = "shadows" if isinstance(key, tuple) and key[0] == "shadow" else "values"
                attrs["holds"] = f"{kind} of {self.fn.name}"
            op = Op("tape_new", [], [T.Tape(type)], attrs, names=[f"{name}_tape"])
            self.tape_ops.append(op)
            tape = self.tapes[key] = op.result
            if isinstance(key, tuple) and key[0] == "shadow":
                self.shadow_tapes.add(tape)
            if self.depth >= 1 and self.top_loop is not None:
                self.top_loop_tapes.append((tape, tuple(self.loop_nest[1:]), length))
        return tape

    def carried_arrays(self, op):
        """The active array slots an if/for/while carries: (result index, init operand
        index or None, {region index: (param index or None, yielded index)})."""
        slots = []
        for k, r in enumerate(op.results):
            if not (isinstance(r.type, T.Array) and _float(r.type) and r in self.active):
                continue
            if op.prim == "if":
                slots.append((k, None, {0: (None, k), 1: (None, k)}))
            elif op.prim == "for":  # (else its adjoint, or its shadow, is carried backwards)
                if (op, k) not in self.functional_slots and (op, k) not in self.late_slots:
                    slots.append((k, 3 + k, {0: (1 + k, k)}))
            else:  # while: the head passes its params on to the body, which yields them back
                slots.append((k, k, {0: (k, 1 + k), 1: (k, k)}))
        return slots

    def forward_region_op(self, op):
        """An active array carried by a loop or merged by an if carries its shadow array
        alongside (an extra slot): each iteration's new array has its own shadow, and the
        block parameter's shadow is the previous iteration's, so contributions reach it."""
        slots = self.carried_arrays(op)
        regions = []
        outer = self.b.block
        if self.depth == 0:
            self.top_loop = op if op.prim == "for" else None
            self.top_loop_tapes = []
        extra_inits = []
        for k, init, _ in slots:
            if init is not None:
                v = op.operands[init]
                extra_inits.append(self.shadow_or_zeros(v))
        self.depth += 1
        if op.prim in ("for", "while"):
            self.loop_nest.append(op)
        for i, region in enumerate(op.regions):
            block = Block([Value(p.type, p.name) for p in region.params])
            for old, new in zip(region.params, block.params):
                self.val[old] = new
            for k, init, where in slots:
                param, _ = where[i]
                if param is not None:
                    old = region.params[param]
                    shadow = Value(old.type, f"{old.name or 'a'}_bar")
                    block.params.append(shadow)
                    self.shadow[old] = shadow
            self.b.block = block
            for old in region.params:
                self.remember(old)
            for k in range(len(op.results)):
                if (op, k) in self.late_slots:
                    self.late_shape(region.params[1 + k])
            # a loop whose reversed copy runs the body again tapes nothing inside it
            plain = self.checkpoints.get(op, ("",))[0] == "recompute"
            self.plain += plain
            self.forward(region)
            self.plain -= plain
            if op in self.scratch and region is op.regions[-1]:
                self.save_scratch(op)
            term = region.terminator
            extra = [self.shadow_or_zeros(term.operands[where[i][1]]) for _, _, where in slots]
            if term.prim == "condition":
                extra = [self.shadow[region.params[where[i][0]]] for _, _, where in slots]
            self.b.emit(term.prim, [self.val[v] for v in term.operands] + extra)
            regions.append(block)
        self.depth -= 1
        if op.prim in ("for", "while"):
            self.loop_nest.pop()
        self.b.block = outer
        operands = [self.val[v] for v in op.operands] + extra_inits
        types = [r.type for r in op.results] + [op.results[k].type for k, _, _ in slots]
        attrs = dict(op.attrs, result_types=types) if "result_types" in op.attrs else op.attrs
        new = self.b.emit(op.prim, operands, attrs,
                          names=[r.name for r in op.results] +
                          [f"{op.results[k].name or 'a'}_bar" for k, _, _ in slots],
                          loc=op.loc, result_types=types)
        new.regions = regions
        self.clones[op] = new
        for j, (k, _, _) in enumerate(slots):
            self.shadow[op.results[k]] = new.results[len(op.results) + j]
        for old, r in zip(op.results, new.results):
            self.val[old] = r
        for k, r in enumerate(op.results):  # a functional slot's result used as memory
            if ((op, k) in self.functional_slots and r not in self.functional or
                    (op, k) in self.late_slots) and r in self.active:
                self.shadow[r] = self.zeros_like(self.val[r], f"{r.name or 'a'}_bar")
        if op.prim == "while":
            self.count_while(op, new, outer)
        if self.depth == 0 and self.top_loop is op:
            self.reserve_tapes(new, outer)
        for old in op.results:
            self.remember(old)

    def shadow_or_zeros(self, v):
        """The shadow of array `v` (a new zero one for an array without a derivative)."""
        if v in self.shadow:
            return self.shadow[v]
        return self.zeros_like(self.val[v], f"{v.name or 'a'}_bar")

    def reserve_tapes(self, loop, outer):
        """A top-level counted loop pushes at most once per iteration of the loops around a
        push: size its tapes up front, with the product of the trip counts where the inner
        loops are counted ones whose bounds are known before the top loop."""
        at = outer.ops.index(loop)
        top = self.top_loop
        inside = {v for o in walk_op(top) for v in o.results} | \
            {p for o in walk_op(top) for r in o.regions for p in r.params}
        before = []
        for tape, inner, length in self.top_loop_tapes:
            if not inner and length is None:
                before.append(Op("tape_reserve", [tape] + loop.operands[:3]))
                continue
            if length in inside:
                continue
            trips = self.nested_trips([top] + list(inner), inside, before)
            if trips is not None and length is not None:
                n = Op("shape", [self.val[length]], [T.INT], {"axis": 0})
                product = Op("mul", [trips, n.result], [T.INT])
                before += [n, product]
                trips = product.result
            if trips is not None:
                zero, one = (self.const_op(k, before) for k in (0, 1))
                before.append(Op("tape_reserve", [tape, zero, trips, one]))
        outer.ops[at:at] = before
        self.top_loop = None

    def const_op(self, value, ops):
        op = Op("const", [], [T.INT], {"value": value, "type": T.INT})
        ops.append(op)
        return op.result

    def nested_trips(self, loops, inside, ops):
        """The product of the trip counts of nested counted loops (ops appended to `ops`),
        or None where a loop is not a `for` with a constant step and bounds from outside."""
        total = None
        for loop in loops:
            step = loop.operands[2].owner if loop.prim == "for" else None
            if step is None or step.prim != "const" or not isinstance(step.attrs["value"], int) \
                    or any(v in inside for v in loop.operands[:2]) or step.attrs["value"] <= 0:
                return None
            start, stop = (self.val[v] for v in loop.operands[:2])
            s = step.attrs["value"]
            span = Op("sub", [stop, start], [T.INT])
            ops.append(span)
            trips = span.result
            if s != 1:
                up = Op("add", [trips, self.const_op(s - 1, ops)], [T.INT])
                div = Op("floordiv", [up.result, self.const_op(s, ops)], [T.INT])
                ops += [up, div]
                trips = div.result
            clamp = Op("max", [trips, self.const_op(0, ops)], [T.INT])
            ops.append(clamp)
            if total is None:
                total = clamp.result
            else:
                product = Op("mul", [total, clamp.result], [T.INT])
                ops.append(product)
                total = product.result
        return total

    def count_while(self, op, new, outer):
        """A while loop's iteration count, needed to run its adjoint: add a carried counter."""
        head, body = new.regions
        counter_head = Value(T.INT, "iterations")
        counter_body = Value(T.INT, "iterations")
        head.params.append(counter_head)
        body.params.append(counter_body)
        cond = head.ops[-1]
        cond.operands.append(counter_head)
        self.b.block = body
        term = body.ops.pop()
        one = self.b.const(1, T.INT)
        nxt = self.b.value("add", (counter_body, one))
        term.operands.append(nxt)
        body.ops.append(term)
        self.b.block = outer
        zero = Op("const", [], [T.INT], {"value": 0, "type": T.INT})
        outer.ops.insert(outer.ops.index(new), zero)
        new.operands.append(zero.result)
        count = Value(T.INT, "iterations")
        count.owner = new
        new.results.append(count)
        new.attrs = dict(new.attrs, result_types=[r.type for r in new.results])
        self.counts[op] = count
        if self.depth > 0 and not self.plain:
            key = ("count", op)
            self.b.emit("tape_push", [self.tape_for(key, T.INT), count])

    # -- reverse pass -----------------------------------------------------------------------
    def value_or_zero(self, v, type):
        if v is not None:
            return v
        if isinstance(type, T.Scalar):
            return self.b.const(0.0, type if type.is_float else T.FLOAT)
        raise CompileError(f"no adjoint for a {type}")

    def accumulate(self, adj, old, contribution):
        if contribution is None or old not in self.active or not _float(old.type):
            return
        if isinstance(old.type, T.Array):
            return
        contribution = self.b.cast(contribution, old.type) if contribution.type != old.type \
            else contribution
        prev = adj.get(old)
        adj[old] = contribution if prev is None else self.ops.add(prev, contribution)
        if adj[old].type != old.type:
            adj[old] = self.b.cast(adj[old], old.type)

    def reverse(self, block, adj, scope):
        views = []  # functional views reached, whose contributions are not in yet
        for op in reversed(block.ops[:-1]):
            if op.prim in _VIEWS and op.results[0] in self.functional:
                views.append(op)
                continue
            if op.prim not in ("const", "shape", "size"):
                self.flush_views(views, scope)
            self.reverse_op(op, adj, scope)
        self.flush_views(views, scope)

    def flush_views(self, views, scope):
        """Add what the uses of functional views contributed into their bases' shadows, in
        program order: views made one after the other (x[1:], x[:-1]) are flushed together,
        stores the LLVM backend runs as one forward loop (fusion.py)."""
        saved_loc = self.b.loc
        for op in reversed(views):
            g = self.array_adj.get(op.results[0])
            if g is not None:
                self.b.loc = f"grad of: {op.loc}" if op.loc else saved_loc
                self.b.emit("iadd", [scope.shadow(op.results[0], self), g])
        self.b.loc = saved_loc
        views.clear()

    def reverse_op(self, op, adj, scope):
        saved_loc = self.b.loc
        if op.loc and op.prim not in ("if", "for", "while"):
            self.b.loc = f"grad of: {op.loc}"
        try:
            self._reverse_op(op, adj, scope)
        finally:
            self.b.loc = saved_loc

    def _reverse_op(self, op, adj, scope):
        handler = getattr(self, "rev_" + op.prim, None)
        if handler is not None:
            return handler(op, adj, scope)
        if not op.results or op.results[0] not in self.active:
            return
        if isinstance(op.results[0].type, T.Array) or \
                any(isinstance(v.type, T.Array) for v in op.operands):
            return self.reverse_array_op(op, adj, scope)
        g = adj.get(op.results[0])
        if g is None:
            return
        if op.prim == "cast":
            if op.attrs["to"].is_float:
                self.accumulate(adj, op.operands[0], g)
            return
        if op.prim in ZERO_DERIVATIVE:
            return
        entry = ADJOINTS.get(op.prim)
        if entry is None:
            return
        xs = [scope.get(v) for v in op.operands]
        for v, grad in self.rule_grads(op, entry, xs, scope.get(op.results[0]), g, scope):
            self.accumulate(adj, v, grad)

    def rule_grads(self, op, entry, xs, result, g, scope=None):
        """(operand, contribution) pairs of the op's rule for cotangent `g`, for the active
        operands; `xs` are the operands' values, `result` the result's; libm results the
        adjoint has in `scope` are reused (remember_libm)."""
        rule_name, positions, args_fn = entry
        if op.prim in QUOTIENT:
            args = quotient_args(self.b, op, xs)
            diff = list(op.operands)
        else:
            if op.prim in FLOAT_OPERANDS:
                xs = float_operands(self.b, op, xs)
            args = args_fn(op, xs, result)
            diff = [op.operands[i] for i in positions]
        needs = tuple(v in self.active and _float(v.type) for v in diff)
        if not any(needs):
            return []
        self.ops.scope = scope
        try:
            grads = RULES[rule_name](self.ops, g, needs, *args)
        finally:
            self.ops.scope = None
        return [(v, grad) for v, grad in zip(diff, grads) if grad is not None]

    # -- whole arrays -------------------------------------------------------------------------
    def fill_adjoint(self, op, adj, scope):
        """np.full(shape, v): v gets the sum of what reached the array's elements (its
        shadow holds, by now, the cotangent of the values the allocation wrote)."""
        ndim = op.attrs["ndim"]
        if op.attrs["fill"] != "value" or op.operands[ndim] not in self.active:
            return
        r = op.results[0]
        if r in self.functional:
            g = self.array_adj.get(r)
        elif r in self.shadow or _has_shadow(scope, r):
            g = scope.shadow(r, self)
        else:
            return
        if g is not None:
            self.accumulate(adj, op.operands[ndim], self.ops.sum(g))

    def reverse_array_op(self, op, adj, scope):
        """The adjoint of an op on whole arrays: its cotangent is its shadow array (or, for a
        scalar result, its adjoint); contributions go into the operands' shadows in place."""
        r = op.results[0]
        if op.prim == "alloc":
            self.fill_adjoint(op, adj, scope)
            return
        if op.prim in _VIEWS or op.prim in ("load", "shape", "size"):
            return  # a view's shadow is a view of its operand's: already accumulated there
        if r in self.functional:
            g = self.array_adj.get(r)
            if g is None:
                return  # nothing reached it: its operands get nothing from it
        elif isinstance(r.type, T.Array):
            if r not in self.shadow and not _has_shadow(scope, r):
                return
            g = scope.shadow(r, self)
        else:
            g = adj.get(r)
            if g is None:
                return
        xs = [self.saved_operand(op, k, scope) for k in range(len(op.operands))]
        if op.prim in _READS_RESULT and (self.snapshots.get((op, -1)) is not None or
                                         scope.has(("snapshot", op, -1))):
            scope = _Scope(scope, {r: self.saved_operand(op, -1, scope)})  # r as it was
        prim = op.prim
        if prim == "cast":
            if op.attrs["to"].is_float:
                self.accumulate_into(op.operands[0], g, adj, scope)
            return
        if prim == "copy":
            return self.accumulate_into(op.operands[0], g, adj, scope)
        if prim == "reshape":
            shape = self.ops.shape(xs[0])
            return self.accumulate_into(op.operands[0], self.ops.reshape(g, shape), adj, scope)
        if prim in ("sum", "mean", "amax", "amin"):
            return self.reverse_reduction(op, g, xs, adj, scope)
        if prim == "prod":
            (grad,) = RULES["prod"](self.ops, g, (True,), xs[0], scope.get(r),
                                    op.attrs.get("axis"), bool(op.attrs.get("keepdims")))
            return self.accumulate_into(op.operands[0], grad, adj, scope)
        if prim in ("matmul", "det", "inv", "cofactor", "solve"):
            return self.reverse_linalg(op, g, xs, adj, scope)
        if prim == "trace":
            raise CompileError.at(op.loc, "the gradient of np.trace is not supported yet; use "
                                  "a loop over the diagonal")
        if prim == "stack":
            return self.reverse_stack(op, g, adj, scope)
        if prim == "concatenate":
            return self.reverse_concatenate(op, g, xs, adj, scope)
        if prim == "take":
            if op.operands[0] in self.active:
                self.b.emit("scatter_add", [scope.shadow(op.operands[0], self)] + xs[1:] + [g])
            return
        if prim == "mask":
            if op.operands[0] in self.active:
                self.b.emit("mask_add", [scope.shadow(op.operands[0], self), xs[1], g])
            return
        if prim in ZERO_DERIVATIVE or prim in ("argmax", "argmin"):
            return
        if prim in ("sum_to", "broadcast_to"):  # adjoints of adjoints (pullback of pullback)
            return self.reverse_broadcast(op, g, xs, adj, scope)
        entry = ADJOINTS.get(prim)
        if entry is None:
            raise CompileError.at(op.loc, f"the gradient of '{prim}' on arrays is not "
                                  f"supported yet")
        for v, grad in self.rule_grads(op, entry, xs, scope.get(r), g, scope):
            fitted = grad if _same_shape(v, r) else self.sum_to(grad, scope.get(v))
            self.accumulate_into(v, fitted, adj, scope)

    def saved_operand(self, op, k, scope):
        """Operand k of op as the op read it (k = -1: its result as it made it): its
        snapshot when one was taken."""
        saved = self.snapshots.get((op, k))
        if saved is not None:
            return saved
        if scope.has(("snapshot", op, k)):
            return scope.get(("snapshot", op, k))
        return scope.get(op.operands[k])

    def sum_to(self, g, like):
        """g (broadcast from `like`'s shape) summed back to it."""
        if not isinstance(g.type, T.Array):
            return g
        return self.b.value("sum_to", (g, like))

    def accumulate_into(self, v, contribution, adj, scope, exact=True):
        """Add `contribution` to the adjoint of `v`: to its functional adjoint (a new array
        value: `x_bar = g * y`, then `x_bar = x_bar + ...`), into its shadow array in place,
        or to its scalar adjoint (an array contribution summed first). `exact`: the
        contribution has v's shape (a reduction's broadcasts to it)."""
        if v not in self.active or not _float(v.type) or contribution is None:
            return
        if isinstance(v.type, T.Array):
            if isinstance(contribution.type, T.Array) and contribution.type.dtype != \
                    v.type.dtype or isinstance(contribution.type, T.Scalar) and \
                    contribution.type.dtype != v.type.dtype and not contribution.type.weak:
                contribution = self.b.value("cast", (contribution,),
                                            {"to": T.Scalar(v.type.dtype)})
            if v in self.functional:
                prev = self.array_adj.get(v)
                if prev is not None:
                    contribution = self.ops.add(prev, contribution)
                elif not exact or not isinstance(contribution.type, T.Array):
                    dims = self.ops.shape(scope.get(v))
                    contribution = self.b.value("broadcast_to", [contribution] + list(dims))
                self.array_adj[v] = contribution
                if contribution.name is None and v.name:
                    contribution.name = f"{v.name}_bar"
                return
            self.b.emit("iadd", [scope.shadow(v, self), contribution])
            return
        if isinstance(contribution.type, T.Array):
            contribution = self.b.value("sum", (contribution,), {"axis": None,
                                                                  "keepdims": False})
        self.accumulate(adj, v, contribution)

    def reverse_reduction(self, op, g, xs, adj, scope):
        x = op.operands[0]
        dims, keep = op.attrs.get("axis"), bool(op.attrs.get("keepdims"))
        shape = self.ops.shape(xs[0])
        if op.prim in ("sum", "mean"):
            if dims is not None and not keep and isinstance(g.type, T.Array):
                g = self.ops.reshape(g, tuple(1 if i in dims else n
                                              for i, n in enumerate(shape)))
            if op.prim == "mean":
                count = self.b.value("size", (xs[0],)) if dims is None else \
                    _product(self.b, [shape[i] for i in dims])
                g = self.ops.div(g, count)
            return self.accumulate_into(x, g, adj, scope, exact=False)
        grads = RULES["amax"](self.ops, g, (True,), xs[0], scope.get(op.results[0]), dims, keep)
        self.accumulate_into(x, grads[0], adj, scope)

    def reverse_broadcast(self, op, g, xs, adj, scope):
        """sum_to and broadcast_to transpose each other: sum_to's cotangent is broadcast back
        to its operand's shape, broadcast_to's summed back to its operand's."""
        x = op.operands[0]
        if op.prim == "broadcast_to":
            return self.accumulate_into(x, self.sum_to(g, xs[0]), adj, scope)
        if isinstance(x.type, T.Array):
            dims = self.ops.shape(xs[0])
            g = self.b.value("broadcast_to", [g] + list(dims))
        self.accumulate_into(x, g, adj, scope)

    def reverse_linalg(self, op, g, xs, adj, scope):
        r = scope.get(op.results[0])
        if op.prim == "matmul":
            needs = tuple(v in self.active and _float(v.type) for v in op.operands)
            grads = RULES["matmul"](self.ops, g, needs, *xs)
            for v, x, grad in zip(op.operands, xs, grads):
                if grad is not None:
                    if isinstance(v.type, T.Array) and (v.type.ndim > 2 or _ndim(
                            op.results[0]) > 2):
                        grad = self.sum_to(grad, x)  # batch axes that were broadcast
                    self.accumulate_into(v, grad, adj, scope)
            return
        if op.prim == "det":
            (grad,) = RULES["det"](self.ops, g, (True,), xs[0], r)
        elif op.prim == "inv":
            (grad,) = RULES["inv"](self.ops, g, (True,), r)
        elif op.prim == "cofactor":
            (grad,) = RULES["cofactor"](self.ops, g, (True,), xs[0], r)
        else:
            needs = tuple(v in self.active and _float(v.type) for v in op.operands)
            ga, gb = RULES["solve"](self.ops, g, needs, xs[0], r)
            self.accumulate_into(op.operands[1], gb, adj, scope)
            grad = ga
        self.accumulate_into(op.operands[0], grad, adj, scope)

    def reverse_stack(self, op, g, adj, scope):
        axis = op.attrs["axis"]
        whole = ("slice", False, False, False)
        for k, v in enumerate(op.operands):
            if v not in self.active or not _float(v.type):
                continue
            index = (whole,) * axis + (("int",),)
            part = self.b.value("slice", (g, self.b.const(k)), {"index": index})
            self.accumulate_into(v, part, adj, scope)

    def reverse_concatenate(self, op, g, xs, adj, scope):
        axis = op.attrs["axis"]
        whole = ("slice", False, False, False)
        start = self.b.const(0)
        for v, x in zip(op.operands, xs):
            stop = self.ops.add(start, self.b.value("shape", (x,), {"axis": axis}))
            if v in self.active and _float(v.type):
                index = (whole,) * axis + (("slice", True, True, False),)
                part = self.b.value("slice", (g, start, stop), {"index": index})
                self.accumulate_into(v, part, adj, scope)
            start = stop

    def rev_assign(self, op, adj, scope):
        dst, value = op.operands
        if dst not in self.shadow and not _has_shadow(scope, dst):
            return
        shadow = scope.shadow(dst, self)
        clear = [shadow, self.b.const(0.0, T.Scalar(shadow.type.dtype))]
        active = value in self.active and _float(value.type)
        if active and isinstance(value.type, T.Array):
            # read before the shadow is cleared, and cleared before the value's shadow is
            # added into: the two may overlap (`x[1:-1] = x[2:]`, `x[...] = x`)
            g = shadow if _same_shape(value, dst) else self.sum_to(shadow, scope.get(value))
            g = self.b.value("copy", (g,))
            self.b.emit("assign", clear)
            self.accumulate_into(value, g, adj, scope)
            return
        if active:  # a number: the shadow's sum, read before it is cleared
            self.accumulate_into(value, shadow, adj, scope)
        self.b.emit("assign", clear)

    def rev_iadd(self, op, adj, scope):
        dst, value = op.operands
        kind = op.attrs.get("op", "add")
        active = value in self.active and _float(value.type)
        if kind in ("mul", "div") and not active:
            if dst in self.shadow or _has_shadow(scope, dst):  # d(x * c) = c dx
                self.b.emit("iadd", [scope.shadow(dst, self), scope.get(value)], {"op": kind})
            return
        if kind not in ("add", "sub"):  # (ad/inplace.py rewrites these when it can)
            if active or dst in self.shadow or _has_shadow(scope, dst):
                raise CompileError.at(op.loc, _OLD_VALUE)
            return
        if not active:
            return
        shadow = scope.shadow(dst, self)
        g = shadow if isinstance(value.type, T.Scalar) or _same_shape(value, dst) else \
            self.sum_to(shadow, scope.get(value))
        if op.attrs.get("op") == "sub":
            g = self.ops.neg(g)
        elif value in self.functional and self.cleared_before(op, dst):
            g = self.b.value("copy", (g,))  # kept as a value: read the shadow now
        self.accumulate_into(value, g, adj, scope)

    def cleared_before(self, op, dst):
        """Whether an op before `op` stores or assigns into `dst`'s memory: its adjoint,
        which runs after op's, clears the shadow, so a functional adjoint taken from the
        shadow (`t` in `t = x * w; a[0] = x; a[0] += t`; sum_to may return the shadow
        itself) must be a copy."""
        roots = self.aliases.expand({_root(dst)})
        return any(o.prim in ("store", "assign") and _root(o.operands[0]) in roots
                   for o in self.walked[:self.order[op]])

    def rev_load(self, op, adj, scope):
        array = op.operands[0]
        r = op.results[0]
        if (array not in self.shadow and array not in self.late and
                array not in self.late_yields) or isinstance(r.type, T.Array):
            return  # (a late yield's shadow: the reversed loop carries it, _reverse_loop)
        g = adj.get(r)
        if g is None:
            return
        shadow = scope.shadow(array, self)
        index = [scope.get(v) for v in op.operands[1:]]
        self.b.emit("add_at", [shadow] + index + [g])

    def rev_store(self, op, adj, scope):
        array, *index, value = op.operands
        if array not in self.shadow:
            return
        shadow = scope.shadow(array, self)
        idx = [scope.get(v) for v in index]
        increment = self.increment_of(op) if checkpoint.ENABLED else None
        # (the primal store checked the index)
        if increment is not None:  # a[i] += w: w_bar += a_bar[i], and a_bar[i] stays
            if increment in self.active:
                self.accumulate(adj, increment, self.b.value("load", [shadow] + idx,
                                                             _IN_BOUNDS))
            return
        if value in self.active:
            self.accumulate(adj, value, self.b.value("load", [shadow] + idx, _IN_BOUNDS))
        zero = self.b.const(0.0, T.Scalar(shadow.type.dtype))
        self.b.emit("store", [shadow] + idx + [zero], _IN_BOUNDS)

    def increment_of(self, op):
        """w where `op` stores a[i] + w (or w + a[i]) into a[i], both values used only
        there, with nothing between the load and the store writing memory or branching: its
        adjoint neither zeroes a_bar[i] nor adds it back."""
        array, *index, value = op.operands
        add = value.owner
        if add is None or add.prim != "add" or len(self.users.get(value, ())) != 1:
            return None
        for ld, w in (add.operands, reversed(add.operands)):
            o = ld.owner
            if o is not None and o.prim == "load" and o.operands[0] is array and \
                    list(o.operands[1:]) == index and len(self.users.get(ld, ())) == 1 and \
                    ld.type == value.type == w.type and isinstance(w.type, T.Scalar) and \
                    self.nothing_between(o, op):
                return w
        return None

    def nothing_between(self, first, last):
        """Whether the ops after `first` and before `last` (in one block) are pure and have
        no regions."""
        start, end = self.order.get(first, -1), self.order.get(last, -1)
        if not 0 <= start < end:
            return False
        return all(PRIMS[o.prim].pure and not o.regions and o.prim not in _WRITES
                   for o in self.walked[start + 1:end])

    # -- a reverse-mode program differentiated again (grad of grad) --------------------------
    def adjoint_tape(self, tape):
        """The tape carrying the adjoints of another tape's items, in push order."""
        key = ("adjoint", tape)
        return self.tape_for(key, tape.type.item)

    def rev_tape_pop(self, op, adj, scope):
        tape, r = op.operands[0], op.results[0]
        if tape not in self.active or tape in self.aliases.memory_tapes:
            return  # (memory tapes: the item's shadow is the pushed item's, see above)
        if isinstance(r.type, T.Array):  # (its adjoint is its shadow or functional adjoint)
            g = self.b.value("copy", (self.array_adjoint(r, scope),))
        else:
            g = self.value_or_zero(adj.get(r), r.type)
        self.b.emit("tape_push", [self.adjoint_tape(tape), g])

    def rev_tape_push(self, op, adj, scope):
        tape, value = op.operands
        if tape not in self.active or tape in self.aliases.memory_tapes:
            return
        g = self.b.value("tape_pop", (self.adjoint_tape(tape),))
        self.accumulate_into(value, g, adj, scope)

    def rev_tape_reserve(self, op, adj, scope):
        pass

    def rev_tape_new(self, op, adj, scope):
        pass

    def rev_add_at(self, op, adj, scope):
        array, *index, value = op.operands
        if value not in self.active or array not in self.shadow:
            return
        shadow = scope.shadow(array, self)
        idx = [scope.get(v) for v in index]
        g = self.b.value("load", [shadow] + idx) if idx else shadow
        self.accumulate_into(value, g, adj, scope)  # (a whole array: the seed of a vjp)

    def rev_tuple(self, op, adj, scope):
        g = adj.get(op.results[0])
        if g is None:
            return
        for k, v in enumerate(op.operands):
            if v in self.active and isinstance(v.type, (T.Scalar, T.Array)):
                item = self.b.value("tuple_get", (g,), {"index": k})
                self.accumulate_into(v, item, adj, scope)
            elif v in self.active and isinstance(v.type, T.Tuple):  # a nested tuple (a jvp
                item = self.b.value("tuple_get", (g,), {"index": k})  # of a pullback)
                adj[v] = item if adj.get(v) is None else self.add_tuples(adj[v], item)

    def add_tuples(self, a, c):
        """The sum of two tuple-typed adjoints, item by item."""
        items = []
        for k, t in enumerate(a.type.items):
            x, y = (self.b.value("tuple_get", (v,), {"index": k}) for v in (a, c))
            items.append(self.add_tuples(x, y) if isinstance(t, T.Tuple) else
                         self.ops.add(x, y))
        return self.b.value("tuple", items)

    def rev_tuple_get(self, op, adj, scope):
        if op.results[0] in self.active and adj.get(op.results[0]) is not None:
            raise CompileError("differentiating through a tuple element is not supported yet")

    def array_adjoint(self, v, scope):
        """The adjoint of array v as a value: its functional adjoint, its shadow, or zeros
        (a zero broadcast to v's shape: no memory written)."""
        if v in self.functional:
            g = self.array_adj.get(v)
            if g is not None:
                return g
        elif v in self.shadow or _has_shadow(scope, v):
            return scope.shadow(v, self)
        dims = self.ops.shape(scope.get(v))
        zero = self.b.const(0.0, T.Scalar(v.type.dtype))
        return self.b.value("broadcast_to", [zero] + list(dims))

    def rev_if(self, op, adj, scope):
        carried = self.carried_adjoints(op, adj)
        cond = scope.get(op.operands[0])
        outer = self.b.block
        blocks = []
        for region in op.regions:
            block = Block()
            self.b.block = block
            inner = _Scope(scope, {})
            self.pop_region(region, inner)
            local = {v: adj.get(v) for v in carried}
            for r, y in zip(op.results, region.terminator.operands):
                if adj.get(r) is not None:
                    self.accumulate(local, y, adj[r])
            self.reverse(region, local, inner)
            self.b.emit("yield", [self.value_or_zero(local.get(v), v.type) for v in carried])
            blocks.append(block)
        self.b.block = outer
        self.finish_region(op, "if", [cond], blocks, carried, adj)

    def carried_adjoints(self, op, adj):
        """Active scalars defined outside `op` whose adjoints the reversed regions update, in
        the order of their first use. (Block arguments of regions nested in `op` count as
        defined outside it, as they always have: only what the ops inside define is not.)"""
        params = {p for region in op.regions for p in region.params}
        return [v for v in self._uses(op) if v not in params and v in self.active
                and isinstance(v.type, T.Scalar)]

    def _uses(self, op):
        """The values `op`'s regions use that no op inside them defines, in the order of
        their first use (program order). Memoised, and built from the nested ops' own lists,
        so an op nested in many others is scanned once, not once per enclosing op."""
        uses = self.uses.get(op)
        if uses is None:
            inside = {v for region in op.regions for inner in region.ops
                      for v in inner.results}
            found = {}  # an ordered set
            for region in op.regions:
                for inner in region.ops:
                    for v in inner.operands:
                        if v not in inside:
                            found[v] = None
                    if inner.regions:
                        for v in self._uses(inner):
                            if v not in inside:
                                found[v] = None
            uses = self.uses[op] = list(found)
        return uses

    def finish_region(self, op, prim, operands, blocks, carried, adj, extra=()):
        types = [v.type for v in carried]
        new = self.b.emit(prim, operands, {"result_types": types},
                          names=[f"{v.name}_bar" if v.name else None for v in carried],
                          result_types=types)
        new.regions = blocks
        for v, r in zip(carried, new.results):
            adj[v] = r

    def pop_region(self, region, scope):
        """Pop the values the region's adjoint needs (pushed by the forward pass)."""
        for o in region.ops:
            if o.prim == "const":
                scope.values[o.results[0]] = self.b.const(o.attrs["value"], o.attrs["type"])
            for k in range(-1, len(o.operands)):
                tape = self.tapes.get(("snapshot", o, k))
                if tape is not None:
                    v = o.results[0] if k < 0 else o.operands[k]
                    scope.values[("snapshot", o, k)] = self.b.value(
                        "tape_pop", (tape,), name=f"{v.name or 'a'}_saved")
            count_tape = self.tapes.get(("count", o))
            if count_tape is not None:
                scope.values[("count", o)] = self.b.value("tape_pop", (count_tape,),
                                                          name="iterations")
        for v in region.params:
            if v not in scope.values:  # a reversed loop's index is its own loop variable
                self._pop(v, scope)
            if v in self.late:
                scope.shadows[v] = self.zeros(
                    [self.b.value("tape_pop", (self.tapes[("late", v, i)],), name="n")
                     for i in range(v.type.ndim)], v.type, f"{v.name or 'a'}_bar")
        for o in region.ops:
            if self.recomputable(o) and all(scope.has(x) for x in o.operands):
                clone = self.b.emit(o.prim, [scope.get(x) for x in o.operands], _again(o),
                                    names=[r.name for r in o.results],
                                    result_types=[r.type for r in o.results])
                scope.values[o.results[0]] = clone.results[0]
                r = o.results[0]
                base = o.operands[0] if o.prim in _VIEWS + ("load",) else None
                if ("shadow", r) in self.tapes and base is not None and \
                        (base in self.shadow or _has_shadow(scope, base)):
                    # a view's shadow: the same view of its base's shadow, made again
                    self.view_shadow(o, scope)
                else:
                    self._pop_shadow(r, scope)
                self.late_shadow(o, scope, recomputed=True)
                self.remember_libm(o, scope)
                continue
            for v in o.results:
                self._pop(v, scope)
            self.late_shadow(o, scope)
            self.remember_libm(o, scope)

    def view_shadow(self, o, scope):
        r = o.results[0]
        scope.shadows[r] = self.b.value(
            o.prim, [scope.shadow(o.operands[0], self)] + [scope.get(x) for x in
                                                           o.operands[1:]],
            o.attrs, name=f"{r.name or 'a'}_bar")

    def late_shadow(self, o, scope, recomputed=False):
        """The shadow of a result of `o` made late (late_shape): zeros of its shape (from
        its value when recomputed here, else from the shape tapes), or for a view the same
        view of its base's shadow."""
        if not o.results or o.results[0] not in self.late:
            return
        r = o.results[0]
        if o.prim in _VIEWS + ("load",):
            return self.view_shadow(o, scope)
        if recomputed:
            dims = [self.b.value("shape", (scope.get(r),), {"axis": i})
                    for i in range(r.type.ndim)]
        else:
            dims = [self.b.value("tape_pop", (self.tapes[("late", r, i)],), name="n")
                    for i in range(r.type.ndim)]
        scope.shadows[r] = self.zeros(dims, r.type, f"{r.name or 't'}_bar")

    def recomputable(self, op):
        """Cheap, pure, and computing the same value in the adjoint as in the forward pass:
        arithmetic, comparisons, squares, and elements of arrays nothing writes into. On
        whole arrays: views of arrays nothing writes into, and cheap elementwise arithmetic
        (no libm call) of arrays nothing writes into, which the LLVM backend fuses into
        the adjoint's loops instead of keeping an array per trip on a tape. A libm call in
        a loop that tapes other values anyway (`taping_loops`) is taped too: its forward
        loop runs regardless, and a pop costs far less than a sin or an exp."""
        if op in self.reloadable:  # a scratch array's element, still in memory
            return True
        if op.prim in _LIBM and self.loops_around.get(op) and \
                self.loops_around[op][-1] in self.taping_loops:
            return False
        arrays = [v for v in list(op.results) + list(op.operands) if isinstance(v.type, T.Array)]
        if arrays and op.prim not in ("shape", "size"):
            if any(_root(v) in self.written for v in op.operands if isinstance(v.type, T.Array)):
                return False
            if op.prim in _VIEWS or op.prim == "load":
                return True
            if op.prim not in _CHEAP_ON_ARRAYS:
                return False
            if op.prim == "pow":
                e = op.operands[1].owner
                return e is not None and e.prim == "const" and e.attrs["value"] == 2
            return True
        if op.prim in _RECOMPUTE:
            return True
        if op.prim == "load":
            return isinstance(op.results[0].type, T.Scalar) and \
                _root(op.operands[0]) not in self.written
        if op.prim == "pow":
            e = op.operands[1].owner
            return e is not None and e.prim == "const" and e.attrs["value"] == 2
        return False

    def _taping_loops(self):
        """The loops whose forward pass tapes a value the adjoint reads whatever is done
        with their libm calls (a float they carry, or a value no recomputable op gives, used
        by the derivative code of an active op), outside checkpointed loops (which run
        iterations again)."""
        found = set()
        for op in self.walked:
            around = self.loops_around.get(op, ())
            if any(loop in self.checkpoints for loop in around + (op,)):
                continue
            if op.prim in ("for", "while") and any(
                    _float(p.type) and isinstance(p.type, T.Scalar) and self._read_by_adjoint(p)
                    for p in checkpoint.body_of(op).params):
                found.add(op)  # a float it carries is taped (`p = p * x[i]`)
            if not around or op.prim in _TERMINATORS + ("const", "for", "while") or \
                    self.recomputable(op):
                continue
            if any(isinstance(r.type, T.Scalar) and self._read_by_adjoint(r)
                   for r in op.results):
                found.add(around[-1])
        return found

    def _read_by_adjoint(self, v):
        """Whether the derivative code of an active op reads v (its rule is not linear)."""
        return any(u.prim not in checkpoint.LINEAR and any(r in self.active for r in u.results)
                   for u in self.users.get(v, ()))

    @staticmethod
    def remember_libm(o, scope):
        """A scalar libm result the adjoint has in `scope` (popped or computed again):
        derivative code in that scope needing the same function of the same value (sin's
        rule asks for cos(x)) takes it instead of calling libm again (IROps.scope)."""
        if o.prim in _LIBM and isinstance(o.results[0].type, T.Scalar) and \
                all(scope.has(x) for x in o.operands) and scope.has(o.results[0]):
            key = (o.prim, tuple(scope.get(x) for x in o.operands))
            scope.known[key] = scope.get(o.results[0])

    def _pop(self, v, scope):
        tape = self.tapes.get(v)
        if tape is not None and v not in scope.values:  # (not one recomputed already)
            scope.values[v] = self.b.value("tape_pop", (tape,), name=v.name)
        self._pop_shadow(v, scope)

    def _pop_shadow(self, v, scope):
        shadow_tape = self.tapes.get(("shadow", v))
        if shadow_tape is not None:
            scope.shadows[v] = self.b.value("tape_pop", (shadow_tape,),
                                            name=f"{v.name or 'a'}_bar")

    def rev_for(self, op, adj, scope):
        body = op.regions[0]
        bounds = [scope.get(v) for v in op.operands[:3]]
        index = None
        step = op.operands[2].owner
        if step is not None and step.prim == "const" and isinstance(step.attrs["value"], int):
            bounds = self.reversed_range(bounds[0], bounds[1], step.attrs["value"])
            index = body.params[0]
        self._reverse_loop(op, body, body.params[1:], 3, bounds, adj, scope, index)

    def reversed_range(self, start, stop, step):
        """range(start, stop, step) backwards, for a constant step: (last, start -/+ 1, -step),
        so the adjoint loop visits the same indices in reverse without taping them."""
        b, INT = self.b, T.INT
        s = b.const(step, INT)
        if step > 0:
            span = b.value("sub", [b.value("add", [stop, b.const(step - 1, INT)]), start])
        else:
            span = b.value("sub", [b.value("sub", [start, stop]), b.const(step + 1, INT)])
        trips = b.value("floordiv", [span, b.const(abs(step), INT)])
        trips = b.value("max", [trips, b.const(0, INT)])
        last = b.value("add", [start, b.value("mul", [b.value("sub", [trips, b.const(1, INT)]),
                                                      s])])
        end = b.value("sub" if step > 0 else "add", [start, b.const(1, INT)])
        return [last, end, b.const(-step, INT)]

    def rev_while(self, op, adj, scope):
        """A while loop is reversed by a counted loop over its recorded iteration count."""
        body = op.regions[1]
        count = scope.get_count(op, self)
        bounds = [self.b.const(0, T.INT), count, self.b.const(1, T.INT)]
        if checkpoint.ENABLED:  # backwards: the loop variable is the primal's trip number
            one = self.b.const(1, T.INT)
            bounds = [self.b.value("sub", [count, one], _WRAPS), self.b.const(-1, T.INT),
                      self.b.const(-1, T.INT)]
        self._reverse_loop(op, body, body.params, 0, bounds, adj, scope)

    def _reverse_loop(self, op, body, carried_params, init_offset, bounds, adj, scope,
                      index=None):
        """A loop over the same iterations, body reversed: it carries the adjoints of the
        loop's carried values and of the outer scalars the body uses. With `index`, the
        bounds run the primal's range backwards and the loop variable is that index."""
        loop_carried = [(k, r) for k, r in enumerate(op.results) if r in self.active and
                        (not isinstance(r.type, T.Array) or (op, k) in self.functional_slots)]
        # (other arrays: through their shadows)
        outer_used = self.carried_adjoints(op, adj)
        state = [r for _, r in loop_carried] + outer_used
        counter = Value(T.INT, index.name if index is not None else "_")
        block = Block([counter] + [Value(v.type, f"{v.name}_bar" if v.name else None)
                                   for v in state])
        outer = self.b.block
        self.b.block = block
        inner = _Scope(scope, {index: counter} if index is not None else {})
        backward = []  # (block parameter, the value it yields) of counters carried back
        if index is not None and checkpoint.ENABLED:
            self.induction_values(op, counter, inner, scope)
            backward = self.counters_carried_back(op, block, inner, scope)
        if op.prim == "while" and checkpoint.ENABLED:
            self.while_induction_values(op, counter, inner, scope)
            checkpoint.recompute_exit_flags(self, op, counter, bounds[0], inner, scope)
        late = [k for k in range(len(op.results)) if (op, k) in self.late_slots]
        for k in late:  # the shadow of what this trip yields: the next trip's parameter's
            shadow = Value(op.results[k].type, f"{op.results[k].name or 'a'}_bar")
            block.params.append(shadow)
            inner.shadows[body.terminator.operands[k]] = shadow
        if self.checkpoints.get(op, ("",))[0] == "recompute":
            self.rerun_region(op, body, inner)
        else:
            self.restore_scratch(op, scope)
            self.pop_region(body, inner)
            self.rebuild_scratch(op, inner)
        local = dict(zip(outer_used, block.params[1 + len(loop_carried):]))
        for (k, r), p in zip(loop_carried, block.params[1:]):
            if isinstance(r.type, T.Array):
                self.accumulate_into(body.terminator.operands[k], p, local, inner)
            else:
                self.accumulate(local, body.terminator.operands[k], p)
        self.reverse(body, local, inner)
        yields = [self.array_adjoint(carried_params[k], inner) if isinstance(r.type, T.Array)
                  else self.value_or_zero(local.get(carried_params[k]), r.type)
                  for k, r in loop_carried]
        yields += [self.value_or_zero(local.get(v), v.type) for v in outer_used]
        yields += [y for _, y, _ in backward]
        self.b.emit("yield", yields + [inner.shadows[body.params[1 + k]] for k in late])
        self.b.block = outer
        inits = [self.array_adjoint(v, scope) if isinstance(v.type, T.Array)
                 else self.value_or_zero(adj.get(v), v.type) for v in state]
        inits += [final for _, _, final in backward]
        inits += [scope.shadow(op.results[k], self) for k in late]
        types = [v.type for v in block.params[1:]]
        new = self.b.emit("for", bounds + inits, {"result_types": types},
                          names=[p.name for p in block.params[1:]], result_types=types,
                          loc=self.checkpoints.get(op, (None, None))[1])
        new.regions = [block]
        if index is not None and op in self.clones:
            self.fusable.append((self.clones[op], new))
        # outer accumulators first: an init operand may itself be one of them (v = x; loop)
        for v, value in zip(outer_used, new.results[len(loop_carried):]):
            adj[v] = value
        for (k, r), value in zip(loop_carried, new.results):
            if isinstance(r.type, T.Array):
                self.accumulate_into(op.operands[init_offset + k], value, adj, scope)
            else:
                self.accumulate(adj, op.operands[init_offset + k], value)
        for k, value in zip(late, new.results[len(new.results) - len(late):]):
            self.accumulate_into(op.operands[init_offset + k], value, adj, scope)


    def induction_values(self, op, index, inner, scope):
        """The integer values a counted loop carries that change by a constant each trip
        (`idx += 1`), recomputed from the loop's index instead of taped:
        p = init + (index - start) // step * c."""
        body = op.regions[0]
        start, step = op.operands[0], op.operands[2].owner.attrs["value"]
        for k, p in enumerate(body.params[1:]):
            c = _constant_increment(p, body.terminator.operands[k], body)
            init = op.operands[3 + k]
            if c is None or not scope.has(init) or not scope.has(start):
                continue
            if not (c.owner is not None and c.owner.prim == "const") and not scope.has(c):
                continue
            b = self.b
            trips = b.value("sub", [index, scope.get(start)], _WRAPS)
            if step != 1:
                trips = b.value("floordiv", [trips, b.const(step, T.INT)])
            c_value = b.const(c.owner.attrs["value"], T.INT) if c.owner is not None and \
                c.owner.prim == "const" else scope.get(c)
            offset = b.value("mul", [trips, c_value], _WRAPS)
            prim = body.terminator.operands[k].owner.prim  # add or sub
            inner.values[p] = b.value(prim, [scope.get(init), offset], _WRAPS, name=p.name)

    def while_induction_values(self, op, trip, inner, scope):
        """The integer values a while loop carries that change by a constant each trip (the
        counter of a range loop with `break`, `i += 1` in a while loop), recomputed from the
        trip number `trip` (the reversed loop's variable) instead of taped:
        p = init + trip * c."""
        head, body = op.regions
        passed = head.terminator.operands[1:]
        for k, p in enumerate(body.params):
            if passed[k] is not head.params[k] or not scope.has(op.operands[k]):
                continue
            c = _constant_increment(p, body.terminator.operands[k], body)
            if c is None or not (c.owner is not None and c.owner.prim == "const" or
                                 scope.has(c)):
                continue
            b = self.b
            c_value = b.const(c.owner.attrs["value"], T.INT) if c.owner is not None and \
                c.owner.prim == "const" else scope.get(c)
            offset = b.value("mul", [trip, c_value], _WRAPS)
            prim = body.terminator.operands[k].owner.prim  # add or sub
            inner.values[p] = b.value(prim, [scope.get(op.operands[k]), offset], _WRAPS,
                                      name=p.name)

    def counters_carried_back(self, op, block, inner, scope):
        """Integer values a counted loop carries that grow by a constant times the trip count
        of a counted loop in its body (the column loop's `idx` of a triangular loop, whose
        inner loop does `idx += 1`): the reversed loop carries them backwards from the loop's
        final value, p = p_next - trips * c, instead of popping one per iteration. Returns
        [(block parameter, the value yielded, the initial value)]; the parameters are
        appended to `block` and the values put in `inner`."""
        body = op.regions[0]
        found = []
        for k, p in enumerate(body.params[1:]):
            if p in inner.values or not scope.has(op.results[k]):
                continue
            counted = self.counted_increment(p, body.terminator.operands[k], body)
            if counted is None:
                continue
            loop, c = counted
            trips = self.trip_count(loop, inner, body)
            if trips is None:
                continue
            b = self.b
            nxt = Value(T.INT, p.name)
            block.params.append(nxt)
            c_value = b.const(c.owner.attrs["value"], T.INT) if c.owner is not None and \
                c.owner.prim == "const" else scope.get(c)
            grown = b.value("mul", [trips, c_value], _WRAPS)
            back = "sub" if loop.regions[0].terminator.operands[
                loop.results.index(body.terminator.operands[k])].owner.prim == "add" else "add"
            inner.values[p] = b.value(back, [nxt, grown], _WRAPS, name=p.name)
            found.append((nxt, inner.values[p], scope.get(op.results[k])))
        return found

    def counted_increment(self, p, y, body):
        """(loop, c) where `y` is the result of a counted loop in `body` that starts from `p`
        and adds (or subtracts) c on every trip, c constant or defined outside the body."""
        loop = y.owner
        if loop is None or loop.prim != "for" or loop not in body.ops:
            return None
        j = loop.results.index(y)
        inner_body = loop.regions[0]
        step = loop.operands[2].owner
        if loop.operands[3 + j] is not p or step is None or step.prim != "const" or \
                not isinstance(step.attrs["value"], int) or step.attrs["value"] == 0:
            return None
        c = _constant_increment(inner_body.params[1 + j], inner_body.terminator.operands[j],
                                inner_body)
        if c is None or (c.owner is not None and c.owner in walk(body)
                         and c.owner.prim != "const"):
            return None
        return loop, c

    def trip_count(self, loop, inner, body):
        """The trip count of counted loop `loop` (constant step) in `body`, computed in the
        reversed iteration from values it has (cheap ops of them copied), or None."""
        mine = {r for o in walk(body) for r in o.results}
        start, stop = (self.early_value(v, inner, mine) for v in loop.operands[:2])
        if start is None or stop is None:
            return None
        b, s = self.b, loop.operands[2].owner.attrs["value"]
        span = b.value("sub", [stop, start] if s > 0 else [start, stop], _WRAPS)
        if abs(s) != 1:
            span = b.value("floordiv", [b.value("add", [span, b.const(abs(s) - 1, T.INT)],
                                                _WRAPS), b.const(abs(s), T.INT)])
        return b.value("max", [span, b.const(0, T.INT)])

    def early_value(self, v, inner, mine, depth=0):
        """v in the reversed iteration before its values are popped: the loop index, a value
        from outside the body (`mine`: the body's values), a constant, or cheap integer
        arithmetic of those (copied), else None."""
        if v in inner.values or (v not in mine and inner.has(v)):
            return inner.get(v)
        o = v.owner
        if o is None or depth > 4 or o.prim not in ("const", "add", "sub", "mul", "max",
                                                     "min", "shape") or o.regions:
            return None
        if o.prim == "const":
            return self.b.const(o.attrs["value"], o.attrs["type"])
        args = [self.early_value(x, inner, mine, depth + 1) for x in o.operands]
        if any(a is None for a in args):
            return None
        return self.b.value(o.prim, args, _again(o))

    def scratch_loop(self, array, reverse, item):
        """for j in range(len(array)) (backwards when `reverse`): item(j), in a new loop."""
        b, INT = self.b, T.INT
        n = b.value("shape", (array,), {"axis": 0})
        bounds = [b.value("sub", [n, b.const(1, INT)]), b.const(-1, INT), b.const(-1, INT)] \
            if reverse else [b.const(0, INT), n, b.const(1, INT)]
        block = Block([Value(INT, "j")])
        outer = b.block
        b.block = block
        item(block.params[0])
        b.emit("yield", [])
        b.block = outer
        loop = b.emit("for", bounds, {"result_types": []}, result_types=[])
        loop.regions = [block]

    def save_scratch(self, op):
        """At the end of an iteration of a "store" loop, its scratch arrays go on tapes."""
        for root in self.scratch[op]:
            tape = self.tape_for(("scratch", op, root), T.Scalar(root.type.dtype),
                                 f"{root.name or 'a'}_saved", root)
            array = self.val[root]
            self.scratch_loop(array, False, lambda j: self.b.emit(
                "tape_push", [tape, self.b.value("load", [array, j])]))

    def restore_scratch(self, op, scope):
        """Before an iteration's adjoint, its scratch arrays are put back as it left them."""
        for root in reversed(self.scratch.get(op, ())):
            tape = self.tapes[("scratch", op, root)]
            array = scope.get(root)
            self.scratch_loop(array, True, lambda j: self.b.emit(
                "store", [array, j, self.b.value("tape_pop", (tape,))]))

    def cheap_cover(self, loop, cover, roots):
        """Whether `cover` fills one of `roots` with cheap arithmetic of unwritten arrays,
        and nothing else in the loop's body writes that array: running it again in the
        adjoint costs less than saving and restoring the array."""
        array = checkpoint.covered_array(cover)
        if array not in roots:
            return False
        for o in walk(cover.regions[0]):
            if o.regions or o.prim in _LIBM:
                return False
            if o.prim == "store":
                if o.operands[0] is not array:
                    return False
            elif o.prim not in ("const", "yield") and not self.recomputable(o):
                return False
        writes = [o for o in walk(checkpoint.body_of(loop))
                  if o.prim in _WRITES and _root(o.operands[0]) is array]
        return all(o in walk_op(cover) for o in writes)

    def rebuild_scratch(self, op, inner):
        """Run the cheap covering loops of a "store" loop's iteration again."""
        for cover in self.rebuilt.get(op, ()):
            self.copy_forward(list(cover.operands) + self._uses(cover), [cover], inner,
                              plain=True)

    def copy_forward(self, uses, ops, inner, plain=False):
        """Copy primal `ops` into the adjoint code as top-level code would be copied
        (nothing of theirs taped; loops inside them tape as top-level loops do, unless
        `plain`), taking the values they use from the scope `inner`; their results go into
        `inner`."""
        saved_val = dict(self.val)
        saved = (self.depth, self.top_loop, self.top_loop_tapes, self.loop_nest)
        for v in uses:
            if inner.has(v):
                self.val[v] = inner.get(v)
        self.depth, self.top_loop, self.top_loop_tapes, self.loop_nest = 0, None, [], []
        self.plain += plain
        for o in ops:
            self.forward_op(o)
        self.plain -= plain
        for o in ops:
            for r in o.results:
                inner.values[r] = self.val[r]
            self.remember_libm(o, inner)
        self.depth, self.top_loop, self.top_loop_tapes, self.loop_nest = saved
        self.val.clear()
        self.val.update(saved_val)

    def rerun_region(self, op, body, inner):
        """A checkpointed loop's iteration, run again in its reversed copy (checkpoint.py):
        its carried values are popped, the body is copied as top-level code would be (its
        own values are not taped; loops inside it tape as top-level loops do, sized once),
        and the adjoint takes the values from that copy."""
        for v in body.params:
            if v not in inner.values:
                self._pop(v, inner)
        self.copy_forward(self._uses(op) + list(body.params), body.ops[:-1], inner)


# the attributes of a recomputed op that say its primal already ran: a scalar load needs
# no bounds check (the primal load checked that index), and Python-int arithmetic that
# computes a value again cannot overflow where the primal did not (computed modulo 2**64:
# exact whenever the result fits, as the primal's did)
_WRAPS = {"wraps": True}
_IN_BOUNDS = {"in_bounds": True}


def _again(op):
    """op's attributes for a copy of it in the adjoint code, which recomputes a value the
    forward pass computed from the same operands."""
    if op.prim == "load" and isinstance(op.results[0].type, T.Scalar):
        return dict(op.attrs, in_bounds=True)
    if op.prim in ("add", "sub", "mul") and op.results[0].type == T.INT:
        return dict(op.attrs, **_WRAPS)
    return op.attrs


def _constant_increment(p, y, body):
    """c where the loop yields p + c or p - c for an integer p and a c defined outside the
    body or constant, else None."""
    if not (isinstance(p.type, T.Scalar) and p.type.dtype == "i64"):
        return None
    owner = y.owner
    if owner is None or owner not in body.ops or owner.prim not in ("add", "sub"):
        return None
    a, c = owner.operands
    if owner.prim == "add" and c is p:
        a, c = c, a
    if a is not p or c.type != p.type or any(c is q for q in body.params):
        return None  # p + p, or p + the index: not a constant step
    inside = c.owner is not None and c.owner in body.ops
    if inside and c.owner.prim != "const":
        return None
    return c


class _Scope:
    """Where the adjoint code finds primal values: popped in this region, or outer ones."""

    def __init__(self, parent, values):
        self.parent = parent
        self.values = values
        self.shadows = {}
        self.known = {}  # (libm prim, operand values) -> its value here (remember_libm)

    def _find(self, table, key):
        """(True, value) from the nearest scope whose `table` has `key`, else (False, None)."""
        scope = self
        while scope is not None:
            entries = getattr(scope, table)
            if key in entries:
                return True, entries[key]
            scope = scope.parent
        return False, None

    def known_value(self, key):
        return self._find("known", key)[1]

    def has(self, v):
        return self._find("values", v)[0]

    def get(self, v):
        found, value = self._find("values", v)
        if not found:
            raise CompileError("internal: a value needed by the adjoint is not available")
        return value

    def shadow(self, array, reverse):
        found, value = self._find("shadows", array)
        return value if found else reverse.shadow[array]

    def get_count(self, op, reverse):
        found, value = self._find("values", ("count", op))
        return value if found else reverse.counts[op]


_NOT_DIFFERENTIABLE = ("eq", "ne", "lt", "le", "gt", "ge", "not", "truth", "shape", "size",
                       "assert")


def _reaching_the_output(fn):
    """The values a derivative may flow through on its way to the result: the returned values,
    values stored into tapes, values written into arrays whose contents may reach the output,
    and the operands of differentiable operations whose results reach the output (a fixed
    point over regions; conservative everywhere else). An array's contents may reach the
    output unless it is an argument or an array an op without regions made, and no value
    that reaches the output is that array or a view of it: a value written into an argument
    the result never reads (`a[k] *= inf * x` before `return -0.5 * x`) has no adjoint, whose
    zero would otherwise meet the infinite partial derivative (nan). Programs with tapes
    (a derivative differentiated again) keep every write: their arrays share memory through
    the tapes. An array a loop or a branch merges (a loop's result, its carried parameter, a
    branch's result) is such an array when every array of its slot (_merged_slots) is, and
    nothing writes into them. Returns (those values, the test of whether an array's memory
    root is such an array whose contents reach no output)."""
    useful = set(fn.body.terminator.operands)
    ops = list(walk(fn.body))
    regions = [op for op in ops if op.regions]
    params = set(fn.params)
    tapes = any(op.prim.startswith("tape_") for op in ops)
    read = set()  # memory roots of the useful array values
    slots = _merged_slots(regions)
    written = {_root(op.operands[0]) for op in ops if op.prim in _WRITES}
    merged = [-1, set()]  # (len(read) when computed, the merged arrays then unread)

    def mark(values):
        new = [v for v in values if v not in useful]
        useful.update(new)
        read.update(_root(v) for v in new if isinstance(v.type, T.Array))
        return bool(new)

    def made(root):
        return root in params or (root.owner is not None and not root.owner.regions)

    def unread_merges():
        """The merged arrays whose every slot member's root is unread and not written: the
        largest such set (a loop's slot refers to itself), for the roots read so far."""
        if merged[0] != len(read):  # (read only grows)
            ok = {v for v in slots if v not in read and v not in written}
            changed = True
            while changed:
                changed = False
                for v in list(ok):
                    roots = [_root(m) for m in slots[v]]
                    if not all(r in ok or made(r) and r not in read and r not in written
                               for r in roots):
                        ok.discard(v)
                        changed = True
            merged[:] = [len(read), ok]
        return merged[1]

    def unread(root):
        if tapes:
            return False
        if made(root):
            return root not in read
        return root in slots and root in unread_merges()

    read.update(_root(v) for v in useful if isinstance(v.type, T.Array))
    changed = True
    while changed:
        changed = False
        for op in reversed(ops):
            if op.prim in ZERO_DERIVATIVE or op.prim in _NOT_DIFFERENTIABLE:
                continue
            if op.prim in _WRITES:
                if not unread(_root(op.operands[0])):
                    changed |= mark(op.operands)
                continue
            if op.prim in ("yield", "condition"):
                continue  # a region's terminator: _region_flow, slot by slot
            if not op.results or op.prim == "tape_push" or \
                    any(r in useful for r in op.results):
                if op.regions:
                    continue  # region operands: below, result by result
                changed |= mark(op.operands)
        for op in regions:
            changed |= mark(_region_flow(op, useful))
    return useful, unread


def _merged_slots(regions):
    """{array a loop or branch merges: the values of its slot}: a loop's result, carried
    parameters, initial and yielded values; a branch's result and the values its regions
    yield."""
    slots = {}
    for op in regions:
        params = {p for region in op.regions for p in region.params}
        for group in region_slots(op):
            if isinstance(group[-1].type, T.Array):
                for v in group:
                    if v.owner is op or v in params:  # (the merged ones)
                        slots[v] = group
    return slots


def _region_flow(op, useful):
    """The values of region op `op` (operands, block parameters, yielded values) that carry
    a useful result or block parameter, and the conditions that steer them. A loop-carried
    variable is useful in all its places or in none (the reverse loop carries its adjoint)."""
    found = []
    if op.prim == "if":
        found.append(op.operands[0])
        for region in op.regions:
            found += [y for y, r in zip(region.terminator.operands, op.results) if r in useful]
    elif op.prim == "for":
        body = op.regions[0]
        found += op.operands[:3]
        for k, r in enumerate(op.results):
            if r in useful or body.params[1 + k] in useful:
                found += [op.operands[3 + k], body.params[1 + k], body.terminator.operands[k],
                          r]
    elif op.prim == "while":
        head, body = op.regions
        found.append(head.terminator.operands[0])
        for k, r in enumerate(op.results):
            if r in useful or head.params[k] in useful or body.params[k] in useful:
                found += [op.operands[k], head.params[k], body.params[k],
                          head.terminator.operands[1 + k], body.terminator.operands[k], r]
    else:
        found += op.operands
        for region in op.regions:
            found += region.params + list(region.terminator.operands)
    return [v for v in found if v not in useful]


# views share their operand's memory (a row `load` is one too); ops that write array memory
_VIEWS = ("slice", "transpose", "diagonal")
_TAPE_OPS = ("tape_new", "tape_push", "tape_pop", "tape_reserve")
_WRITES = ("store", "add_at", "assign", "iadd", "scatter_add", "mask_add")


def _has_shadow(scope, v):
    while scope is not None:
        if v in scope.shadows:
            return True
        scope = scope.parent
    return False


# uses that need an array's adjoint in memory (element accumulation, views, writes) or in a
# region (reversed loops and branches carry shadows, not values)
_MEMORY_USES = frozenset(("load", "store", "add_at", "slice", "transpose", "diagonal",
                          "assign", "iadd", "scatter_add", "mask_add", "take", "mask", "if",
                          "for", "while", "yield", "condition", "tuple", "tape_push"))


def _through_reshape(array):
    """Whether `array` is a reshape, or a view of one (memory_root's chain)."""
    while array.owner is not None and array.owner.prim in MEMORY_VIEWS:
        if array.owner.prim == "reshape":
            return True
        array = array.owner.operands[0]
    return False


def _functional_arrays(fn, active, aliases):
    """Active arrays whose adjoint can be an ordinary value (`x_bar = g * y`) instead of a
    zero-filled shadow array updated in place: defined at the top level (arguments and
    results of top-level ops other than allocations and views) and used only by top-level
    whole-array operations. A top-level view of an array nothing writes into qualifies too:
    its contributions are added up as values and go into its base's shadow once, where the
    view is made (`x_bar[:-1] += g1 + g2` rather than one update per use of x[:-1]; see
    flush_views). Arrays sharing memory through a tape with written ones (`aliases`) do not:
    their shadows alias as they do."""
    written = aliases.expand({_root(op.operands[0]) for op in walk(fn.body)
                              if op.prim in _WRITES})
    slots, inner = _functional_loops(fn, active, aliases.classes)
    top = set(fn.params)
    for op in fn.body.ops:
        if op.prim in _VIEWS:
            if _root(op.operands[0]) not in written:
                top.update(op.results)
        elif op.prim == "for":  # a result carried by a functional slot
            top.update(op.results[k] for k in range(len(op.results)) if (op, k) in slots)
        elif op.prim not in ("alloc", "load") and \
                not op.regions:  # (a loop's or if's array result carries its shadow)
            top.update(op.results)
    candidates = {v for v in top if isinstance(v.type, T.Array) and _float(v.type)
                  and v in active}
    for op in fn.body.ops:
        candidates.difference_update(v for v in op.operands if _memory_use(op, v, slots))
        for region in op.regions:  # used inside a loop or branch
            for nested in walk(region):
                candidates.difference_update(nested.operands)
    return (candidates - aliases.classes.keys()) | inner, slots


def _functional_loops(fn, active, memory):
    """Arrays carried by counted loops whose adjoints can be values carried by the reversed
    loop, as scalars' are, instead of shadow arrays allocated, taped and zero-filled on every
    iteration: {(loop, slot)}, and the arrays of their bodies that are functional too.
    A slot qualifies when its body parameter and the value its body yields are used only by
    whole-array operations of the body itself (no element reads or writes, no views, no
    nested loop or branch) and the yielded value is the parameter or made by such an
    operation; every array those operations make in the body qualifies the same way.
    `memory`: arrays that share memory through a tape with written ones (never functional)."""
    slots, inner = set(), set()
    for op in reversed(list(walk(fn.body))):  # inner loops first
        if op.prim != "for":
            continue
        body = op.regions[0]
        yields = body.terminator.operands
        uses = {}
        for o in body.ops:
            for v in o.operands:
                uses.setdefault(v, []).append(o)
        for nested in body.ops:
            for region in nested.regions:
                for o in walk(region):
                    for v in o.operands:
                        uses.setdefault(v, []).append(None)  # used inside a nested region

        def plain(v):
            return isinstance(v.type, T.Array) and _float(v.type) and v in active and \
                v not in memory and \
                all(u is not None and (u is body.terminator or not _memory_use(u, v, slots))
                    for u in uses.get(v, []))

        made = {r for o in body.ops if not o.regions and o.prim not in ("alloc", "load")
                and o.prim not in _VIEWS for r in o.results}
        made.update(r for o in body.ops if o.prim == "for"
                    for k, r in enumerate(o.results) if (o, k) in slots)
        candidates = {v for v in made if plain(v)}
        found = set()
        for k, p in enumerate(body.params[1:]):
            y = yields[k]
            if plain(p) and (y is p or y in candidates):
                found.add(k)
        params = body.params[1:]
        changed = True
        while changed:
            changed = False
            # a yielded value of a slot that is not functional needs its shadow, also when
            # it is another slot's parameter (`a, b = b, a * x`: a's slot yields b)
            for k, y in enumerate(yields):
                if k not in found:
                    candidates.discard(y)
                    for j in [j for j in found if params[j] is y]:
                        found.discard(j)
                        changed = True
            for k in list(found):
                if yields[k] is not params[k] and yields[k] not in candidates:
                    found.discard(k)
                    changed = True
        slots.update((op, k) for k in found)
        inner.update(candidates)
        inner.update(body.params[1 + k] for k in found)
    return slots, inner


_ESCAPES = ("yield", "condition", "return", "tuple", "tape_push", "if", "for", "while")


class _Reach:
    """Where arrays go: their views, and their uses that let them outlive the iteration that
    made them (yielded, carried, returned, put in tuples or on tapes)."""

    def __init__(self, fn, written, memory):
        self.written, self.memory = written, memory
        self.views, self.escapes = {}, {}
        for op in walk(fn.body):
            if op.prim in _VIEWS or op.prim == "load":
                self.views.setdefault(op.operands[0], []).extend(op.results)
            if op.prim in _ESCAPES:
                for k, v in enumerate(op.operands):
                    if isinstance(v.type, T.Array):
                        self.escapes.setdefault(v, []).append((op, k))

    def stays(self, v, allowed=(), depth=0):
        """Whether v and its views are not written and escape only through `allowed`."""
        return _root(v) not in self.written and v not in self.memory and depth < 64 and \
            all(use in allowed for use in self.escapes.get(v, ())) and \
            all(self.stays(w, (), depth + 1) for w in self.views.get(v, ()))


def _local_arrays(fn, reach):
    """Arrays made by ops inside loops and branches whose memory no op outside the iteration
    that made them can reach (`_Reach.stays`) and that share no memory through a tape. Their
    shadows receive contributions only from the adjoints of the same iteration, so the
    reversed region can make them (zeros) instead of the forward pass making one per trip
    and taping it: memory for one iteration rather than for all."""
    local = set()
    for op in walk(fn.body):
        for region in op.regions:
            for inner in region.ops:
                local.update(r for r in inner.results if isinstance(r.type, T.Array))
    return {v for v in local if reach.stays(v)}


def _late_slots(fn, reach, functional_slots):
    """Array slots of counted loops whose shadows the reversed loop carries instead of the
    forward pass: {(loop, slot)}. The body's parameter and the new array it yields for it
    (made by an op of the body that makes new arrays) reach nothing outside the iteration
    but through that yield. The forward pass then makes and tapes no shadow per trip; the
    reversed loop makes the parameter's shadow (zeros) each trip and carries it to the trip
    before as the shadow of what that trip yielded."""
    found = set()
    for op in walk(fn.body):
        if op.prim != "for":
            continue
        body = op.regions[0]
        term = body.terminator
        for k, (p, y) in enumerate(zip(body.params[1:], term.operands)):
            made = y.owner
            if (op, k) in functional_slots or not isinstance(p.type, T.Array) or \
                    made is None or made not in body.ops or made.regions or \
                    made.prim in _VIEWS + _TAPE_OPS + ("load", "alloc", "tuple_get"):
                continue
            if reach.stays(p) and reach.stays(y, [(term, k)]):
                found.add((op, k))
    return found


def _memory_use(op, v, slots):
    """Whether op's use of array v needs v's adjoint in a shadow array: element reads and
    writes, views, loops and branches (except as the initial value of a loop slot whose
    adjoint is carried as a value, or as the value `x[...] = v` / `x[...] += v` writes)."""
    if op.prim not in _MEMORY_USES:
        return False
    if op.prim in ("assign", "iadd") and op.operands[0] is not v:
        return False  # the value written: its adjoint is accumulated as a value (rev_assign)
    if op.prim != "for":
        return True
    return any(x is v and (k < 3 or (op, k - 3) not in slots)
               for k, x in enumerate(op.operands))


def _dims(v, memo=None):
    """A symbolic length per axis of array v: equal keys mean equal lengths. An argument's
    axis is ("dim", v, i, 0); x[a:] and x[:-a] of it are ("dim", v, i, a) (both max(n - a, 0));
    elementwise ops without broadcasting keep their operands' keys; anything else gets keys
    of its own."""
    memo = {} if memo is None else memo
    if v in memo:
        return memo[v]
    own = tuple(("own", v, i) for i in range(v.type.ndim))
    op, result = v.owner, own
    if op is not None and op.prim in ELEMENTWISE:
        arrays = [_dims(x, memo) for x in op.operands if isinstance(x.type, T.Array)]
        if arrays and all(len(a) == v.type.ndim and a == arrays[0] for a in arrays):
            result = arrays[0]
    elif op is not None and op.prim == "transpose":
        base = _dims(op.operands[0], memo)
        result = tuple(base[p] for p in op.attrs["perm"])
    elif op is not None and op.prim == "slice":
        result = _sliced_dims(op, _dims(op.operands[0], memo), own)
    elif op is not None and op.prim == "concatenate":
        result = _joined_dims(op, [_dims(x, memo) for x in op.operands], own)
    elif op is not None and op.prim == "matmul" and v.type.ndim <= 2:
        a, c = (_dims(x, memo) for x in op.operands)
        result = (a[:-1] if len(a) == 2 else ()) + (c[-1:] if len(c) == 2 else ())
        result = result if len(result) == v.type.ndim else own
    elif op is not None and op.prim == "arange" and _const(op.operands[0]) == 0 and \
            _const(op.operands[2]) == 1:  # np.arange(n): n elements
        result = (_length_key(op.operands[1], memo),)
    elif op is not None and op.prim in ("alloc", "broadcast_to"):
        lengths = op.operands[:op.attrs["ndim"]] if op.prim == "alloc" else op.operands[1:]
        result = tuple(_length_key(d, memo) for d in lengths)
    elif op is None and v in _LOOP_PARAMS:  # the same shape on every trip, if it stays
        init, yielded = _LOOP_PARAMS[v]
        guess = _dims(init, memo)
        trial = dict(memo)
        trial[v] = guess
        result = guess if _dims(yielded, trial) == guess else own
        if result == guess:
            memo.update(trial)
    elif op is None:
        result = tuple(("dim", v, i, 0) for i in range(v.type.ndim))
    memo[v] = result
    return result


# a counted loop's carried array parameter -> (its initial value, the value its body yields),
# for the shape analysis (set while a function is differentiated)
_LOOP_PARAMS = {}


def _const(v):
    return v.owner.attrs["value"] if v.owner is not None and v.owner.prim == "const" else None


def _length_key(d, memo):
    """The key of a length given as an int value: an array's axis when it is x.shape[i]."""
    owner = d.owner
    if owner is not None and owner.prim == "shape":
        return _dims(owner.operands[0], memo)[owner.attrs["axis"]]
    return ("value", d)


def _sliced_dims(op, base, own):
    from adcompile.frontend.shapes import const_int

    out, axis, values = [], 0, list(op.operands[1:])
    for item in op.attrs["index"]:
        if item[0] == "new":
            out.append(("one",))
            continue
        key = base[axis] if axis < len(base) else None
        axis += 1
        if item[0] == "int":
            values.pop(0)
            continue
        start, stop, step = (const_int(values.pop(0)) if present else "none"
                             for present in item[1:])
        out.append(_slice_key(key, start, stop, step) or ("own", op, axis))
    out += list(base[axis:])
    return tuple(out) if len(out) == len(own) else own


def _slice_key(key, start, stop, step):
    """The key of x[start:stop] along an axis of key ("dim", v, i, 0), length n: x[a:] and
    x[:-a] are ("dim", v, i, a) (max(n - a, 0)); x[:a] and x[-a:] are ("head", v, i, a)
    (min(n, a)); None when the slice is not one of these."""
    if key is None or key[0] != "dim" or step not in ("none", 1):
        return None
    if key[3] == 0 and stop == "none" and start not in ("none", None) and start < 0:
        return ("head",) + key[1:3] + (-start,)
    if key[3] == 0 and start == "none" and stop not in ("none", None) and stop >= 0:
        return ("head",) + key[1:3] + (stop,)
    if (start == "none" or (start is not None and start >= 0)) and \
            (stop == "none" or (stop is not None and stop < 0)):
        cut = (0 if start == "none" else start) + (0 if stop == "none" else -stop)
        return key[:3] + (key[3] + cut,) if key[3] == 0 or cut == 0 else None
    return None


def _joined_dims(op, parts, own):
    """np.concatenate's keys: the parts' keys off the axis (all equal), and along it the
    whole axis where the parts are a head and the rest of one axis, min(n, a) + max(n - a, 0)
    = n (`np.concatenate((x[:1], x[1:] * y[:-1]))`, a stencil's shift)."""
    axis = op.attrs["axis"]
    if len(parts) != 2 or any(len(p) != len(own) for p in parts) or \
            any(parts[0][i] != parts[1][i] for i in range(len(own)) if i != axis):
        return own
    along = {parts[0][axis], parts[1][axis]}
    keys = [k for k in along if k[0] in ("dim", "head")]
    if len(keys) != 2 or {k[0] for k in keys} != {"dim", "head"} or \
            len({(k[1], k[2], k[3]) for k in keys}) != 1:
        return own
    whole = ("dim",) + keys[0][1:3] + (0,)
    return parts[0][:axis] + (whole,) + parts[0][axis + 1:]


def _shape_root(v):
    """Values with the same shape root have the same shape: an elementwise op whose array
    operands share a root has their shape (nothing was broadcast)."""
    seen = 0
    while v.owner is not None and seen < 64:
        op = v.owner
        if op.prim not in ELEMENTWISE:
            break
        arrays = [x for x in op.operands if isinstance(x.type, T.Array)]
        if not arrays or any(x.type.ndim != v.type.ndim for x in arrays):
            break
        roots = {_shape_root(x) for x in arrays[1:]}
        first = arrays[0]
        if roots and roots != {_shape_root(first)}:
            break
        v, seen = first, seen + 1
    return v


def _same_shape(a, b):
    """Whether arrays (or scalars) a and b certainly have the same shape."""
    if isinstance(a.type, T.Scalar) and isinstance(b.type, T.Scalar):
        return True
    if not (isinstance(a.type, T.Array) and isinstance(b.type, T.Array)) or \
            a.type.ndim != b.type.ndim:
        return False
    return _shape_root(a) is _shape_root(b) or _dims(a) == _dims(b)


def _ndim(v):
    return v.type.ndim if isinstance(v.type, T.Array) else 0


def _product(b, values):
    result = values[0]
    for v in values[1:]:
        result = b.value("mul", (result, v))
    return result


def _prune_tapes(body):
    """Drop tapes whose popped values the adjoint never uses (with their pushes and pops). A
    popped value pushed on another tape is used when that tape is (reverse over reverse)."""
    tape_of = {op.results[0]: op.operands[0] for op in walk(body) if op.prim == "tape_pop"}
    tapes = {op.results[0] for op in walk(body) if op.prim == "tape_new"}
    live, feeds = set(), {}
    for op in walk(body):
        if op.prim == "tape_push" and op.operands[1] in tape_of:
            feeds.setdefault(op.operands[0], []).append(tape_of[op.operands[1]])
        elif op.prim not in ("tape_push", "tape_reserve"):
            live.update(tape_of[v] for v in op.operands if v in tape_of)
    work = list(live)
    while work:
        for source in feeds.get(work.pop(), ()):
            if source not in live:
                live.add(source)
                work.append(source)
    _remove(body, tapes - live)
    return bool(tapes - live)


def _remove(block, dead):
    kept = []
    for op in block.ops:
        for region in op.regions:
            _remove(region, dead)
        if op.prim == "tape_new" and op.results[0] in dead:
            continue
        if op.prim in ("tape_push", "tape_pop", "tape_reserve") and op.operands[0] in dead:
            continue
        kept.append(op)
    block.ops = kept


# -- fusing a loop with its reversed copy ------------------------------------------------------

_FUSABLE_EFFECTS = ("add_at", "yield", "if", "for", "while")


def _fuse_loops(body, pairs):
    """Run a reversed loop's body inside its forward loop when that cannot change what it
    computes, so a loop like Rosenbrock's value+gradient makes one pass over memory instead
    of two. It holds when the reversed loop
    - reads no array anything writes (it only recomputes from its index, from values
      defined before the forward loop and from what it pops),
    - pops only tapes that the forward loop alone pushes (nothing else pushes or pops them):
      each iteration pops what the same iteration of the forward loop pushed, so run right
      after it, it pops those very values (the tape then holds one iteration's),
    - only accumulates into shadow arrays (add_at), or stores at its own index into a 1-d
      one (each iteration its own element), which no code between the two loops reads,
    - carries adjoints it never changes (s_bar of `s += ...`), initialised before the loop.
    Then iteration order only changes the order of the additions into the shadow arrays.
    `pairs` (forward loop, its reversed loop) are tried in order, each on the program the
    earlier fusions left; `_Fusion` does it in time linear in the size of `body`.
    Returns the tapes such a fusion left pushed and popped in one trip, with their loops."""
    fusion = _Fusion(body)
    for forward, backward in pairs:
        fusion.fuse(forward, backward)
    fusion.flush()
    return fusion.one_trip


def _forward_tapes(body, one_trip):
    """A fused loop's trip pops what the same trip pushed (`_fuse_loops`): a scalar tape that
    the loop's body pushes once and pops once, each at most inside `if`s, carries one value
    from the push to the pop. The pop's result becomes the pushed value itself, brought out of
    the `if`s around the push as an extra result of each (the other branch yields a zero it
    never uses: the pop runs in the trips the push did), and push and pop go; `_prune_tapes`
    then drops the tape, its reservation of a slot per trip and its bookkeeping per trip (ten
    tapes per observation in GradBench ba's gradient). Returns whether any tape went."""
    replace = {}
    for loop, tape in one_trip:
        push, pop = _tape_ops(loop.regions[0], tape)
        if push is None:
            continue
        value = push[0].operands[1]
        for op, branch in reversed(push[1]):  # innermost `if` first
            value = export_from_if(op, branch, value)
        replace[pop[0].results[0]] = value
        push[2].ops.remove(push[0])
        pop[2].ops.remove(pop[0])
    if replace:
        for op in walk(body):
            op.operands = [replace.get(v, v) for v in op.operands]
    return bool(replace)


def _tape_ops(region, tape):
    """The one push and the one pop of `tape` in the loop body `region`, each as (op, the `if`s
    around it with the branch it lies in, its block), when there is one of each, only `if`s
    lie between them and the body, and the push's top-level op comes before the pop's;
    otherwise (None, None)."""
    found = {"tape_push": [], "tape_pop": []}

    def visit(block, ifs, top):  # ifs: None inside a nested loop
        for op in block.ops:
            here = op if top is None else top
            if op.prim in found and op.operands[0] is tape:
                found[op.prim].append((op, ifs, block, here))
            for k, r in enumerate(op.regions):
                visit(r, ifs + [(op, k)] if ifs is not None and op.prim == "if" else None,
                      here)

    visit(region, [], None)
    pushes, pops = found["tape_push"], found["tape_pop"]
    if len(pushes) != 1 or len(pops) != 1 or pushes[0][1] is None or pops[0][1] is None:
        return None, None
    order = {op: k for k, op in enumerate(region.ops)}
    if order[pushes[0][3]] >= order[pops[0][3]]:
        return None, None
    return pushes[0][:3], pops[0][:3]


class _Fusion:
    """The state `_fuse_loops` keeps across pairs. Instead of rescanning the body for each
    pair, it indexes the top-level ops once: each op's position, where each top-level value
    is defined, the arrays anything writes, and where the ops that load or store each
    written array are. A fusion moves ops that load no written array and store nothing, and
    removes the reversed loop, so the index stays true; its results are replaced by their
    initial values lazily (resolved when read, applied to the body at the end). Replacing
    values that are not scalars could change the arrays the index names, so such a fusion is
    applied to the body at once and the body reindexed."""

    def __init__(self, body):
        self.body = body
        self.replace = {}     # results of removed reversed loops -> their initial values
        self.removed = set()  # the reversed loops fused so far
        self.one_trip = []    # (forward loop, tape its trips now push and pop), for _forward_tapes
        self.index()

    def index(self):
        ops = self.body.ops
        self.position = {op: k for k, op in enumerate(ops)}
        self.defined_at = {v: k for k, op in enumerate(ops) for v in op.results}
        self.written = {_root(op.operands[0]) for op in walk(self.body)
                        if op.prim in ("store", "add_at")}
        self.accesses = {}  # written array -> positions of the ops loading or storing it
        self.tape_uses = {}  # tape -> (position, prim) of each op using it
        for k, op in enumerate(ops):
            for o in walk_op(op):
                for v in o.operands:
                    if isinstance(v.type, T.Tape):
                        self.tape_uses.setdefault(v, []).append((k, o.prim))
                if o.prim in ("load", "store"):
                    root = _root(o.operands[0])
                    if root in self.written:
                        at = self.accesses.setdefault(root, [])
                        if not at or at[-1] != k:
                            at.append(k)

    def resolve(self, value):
        while value in self.replace:
            value = self.replace[value]
        return value

    def flush(self):
        """Apply the pending removals and replacements to the body, and reindex it."""
        if not self.removed and not self.replace:
            return
        self.body.ops = [op for op in self.body.ops if op not in self.removed]
        if self.replace:
            for op in walk(self.body):
                op.operands = [self.resolve(v) for v in op.operands]
        self.replace, self.removed = {}, set()
        self.index()

    def own_tape(self, tape, start, end):
        """Whether `tape` holds scalars, only the forward loop (at `start`) pushes it and only
        its reversed loop (at `end`) pops it; other uses (its reserve) come before the
        forward loop."""
        if not isinstance(tape.type.item, T.Scalar):
            return False
        for k, prim in self.tape_uses.get(tape, ()):
            if (k, prim) not in ((start, "tape_push"), (end, "tape_pop")) and \
                    not (k < start and prim == "tape_reserve"):
                return False
        return True

    def untouched(self, roots, start, end):
        """Whether no op from the forward loop (at `start`) to before the reversed loop (at
        `end`) uses an array of `roots` (stored into by the reversed loop at its index)."""
        for op in self.body.ops[start:end]:
            for o in walk_op(op):
                if any(isinstance(v.type, T.Array) and _root(v) in roots for v in o.operands):
                    return False
        return True

    def fuse(self, forward, backward):
        position = self.position
        if forward not in position or backward not in position or backward in self.removed:
            return False
        start, end = position[forward], position[backward]
        if start > end:
            return False

        def before(v):  # defined by a top-level op before the forward loop
            return self.defined_at.get(v, start) < start

        region = backward.regions[0]
        index, carried = region.params[0], region.params[1:]
        term = region.terminator
        if [self.resolve(v) for v in term.operands] != list(carried):
            return False  # the adjoints it carries change from one iteration to the next
        inits = [self.resolve(v) for v in backward.operands[3:]]
        if not all(before(v) or v.owner is None for v in inits):
            return False
        targets, stored, popped = set(), set(), []
        inside = {index, *carried}
        for op in walk(region):
            if op.prim == "tape_pop" and self.own_tape(op.operands[0], start, end):
                popped.append(op.operands[0])
            elif op.prim == "store" and len(op.operands) == 3 and op.operands[1] is index:
                stored.add(_root(op.operands[0]))
            elif not PRIMS[op.prim].pure and op.prim not in _FUSABLE_EFFECTS:
                return False
            if op.prim == "load" and _root(op.operands[0]) in self.written and \
                    not isinstance(op.results[0].type, T.Array):  # (a row view reads nothing)
                return False
            if op.prim == "add_at":
                targets.add(_root(op.operands[0]))
            inside.update(op.results)
            for r in op.regions:
                inside.update(r.params)
        for op in walk(region):
            for v in op.operands:
                v = self.resolve(v)
                if v not in inside and not before(v) and v.owner is not None:
                    return False  # needs a value computed after the forward loop
        for root in targets | stored:  # no code between the loops loads or stores a target
            at = self.accesses.get(root, ())
            k = bisect.bisect_right(at, start)
            if k < len(at) and at[k] < end:
                return False
        if stored and not self.untouched(stored, start, end):
            return False
        # substitute: the reversed loop's index is the forward loop's; its adjoints are
        # constant
        fwd_region = forward.regions[0]
        subst = {index: fwd_region.params[0], **dict(zip(carried, inits))}
        moved = region.ops[:-1]
        for op in moved:
            for o in walk_op(op):
                o.operands = [subst.get(v, v) for v in o.operands]
        fwd_region.ops[-1:-1] = moved
        self.replace.update(zip(backward.results, inits))
        self.removed.add(backward)
        self.one_trip += [(forward, tape) for tape in popped]
        if not all(isinstance(r.type, T.Scalar) for r in backward.results):
            self.flush()
        return True

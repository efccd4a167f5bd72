"""Constant folding: pure scalar ops whose operands are all constants become constants.

Folding evaluates the op with the reference interpreter's semantics, so a folded value is
exactly what the op would have computed at run time (errors, e.g. 1/0, are left to run time).
"""

from adcompile.ir import interp
from adcompile.ir import types as T
from adcompile.ir.nodes import VIEWS, WRITES, region_slots, walk

_FOLDABLE = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg", "abs", "eq", "ne",
             "lt", "le", "gt", "ge", "not", "truth", "cast", "min", "max"}


def constant_fold(fn):
    _fold_values(fn)
    _fold_loop_invariants(fn)
    _fold_identities(fn)
    _fold_branches(fn)
    return fn


def _fold_identities(fn):
    """x * 1 and x ** 1 (in x's own type) are x, exactly, and a select on a constant picks
    its operand: derivative code produces many of them (the rule for x ** n is n * x ** (n-1),
    guarded against 0 ** -1). (A float x + 0 is not folded: it turns -0.0 into 0.0.)"""
    replace = {}
    written = _written_arrays(fn)
    for op in walk(fn.body):
        if len(op.results) != 1:
            continue
        if isinstance(op.result.type, T.Array) and op.prim != "tuple_get" and (
                op.result in written or any(_root(v) in written for v in op.operands)):
            continue  # x * 1 is a new array: x itself would alias it, seen by a write (also
            # a write into another view of x's memory: seed 1440600711258)
        if op.prim == "mul":
            a, b = op.operands
            for const, other in ((a, b), (b, a)):
                if _is_const_number(const, 1) and other.type == op.result.type:
                    replace[op.result] = other
                    break
        elif op.prim == "pow":
            base, exponent = op.operands
            if _is_const_number(exponent, 1) and base.type == op.result.type:
                replace[op.result] = base
        elif op.prim == "select":
            cond = _resolve(replace, op.operands[0])
            if cond.owner is not None and cond.owner.prim == "const":
                picked = op.operands[1] if cond.owner.attrs["value"] else op.operands[2]
                if picked.type == op.result.type:
                    replace[op.result] = picked
        elif op.prim == "tuple_get":  # (a, b, c)[1] is b: unpacking what a call returned
            src = _resolve(replace, op.operands[0])
            if src.owner is not None and src.owner.prim == "tuple":
                replace[op.result] = src.owner.operands[op.attrs["index"]]
        elif op.prim in ("add", "sub", "floordiv") and op.result.type.is_int:
            # integers only: i + 0, 0 + i, i - 0, i // 1 (index arithmetic of reversed loops)
            a, b = op.operands
            neutral = 1 if op.prim == "floordiv" else 0
            if _is_const_number(b, neutral) and a.type == op.result.type:
                replace[op.result] = a
            elif op.prim == "add" and _is_const_number(a, 0) and b.type == op.result.type:
                replace[op.result] = b
    if replace:
        for op in walk(fn.body):
            op.operands = [_resolve(replace, v) for v in op.operands]


def _root(v):
    """The array a chain of views `v` is taken from (v itself when it is no view)."""
    while v.owner is not None and v.owner.prim in VIEWS:  # (reshape may be a view)
        v = v.owner.operands[0]
    return v


def _written_arrays(fn):
    """Arrays something writes into, directly or through a view (and those views), and every
    array of a loop's or branch's slot one of whose arrays is written (`a = x * 1.0` carried
    by a loop that writes into `a`: x * 1 is a new array there, not x)."""
    written = set()

    def add(v):
        new = v not in written
        written.add(v)
        while v.owner is not None and v.owner.prim in VIEWS:
            v = v.owner.operands[0]
            new |= v not in written
            written.add(v)
        return new

    slots = []
    for op in walk(fn.body):
        if op.prim in WRITES:
            add(op.operands[0])
        slots += [slot for slot in region_slots(op) if isinstance(slot[-1].type, T.Array)]
    changed = True
    while changed:
        changed = False
        for slot in slots:
            if any(v in written or _root(v) in written for v in slot):
                for v in slot:
                    changed |= add(v)
    return written


def _fold_loop_invariants(fn):
    """A value a `for` loop carries unchanged (its body yields the block argument itself) is
    its initial value throughout: the adjoint of `s` in `s += ...` is. Uses of the argument
    and of the loop's result become uses of the initial value, and the slot is dropped."""
    replace = {}
    for op in walk(fn.body):
        if op.prim != "for":
            continue
        body = op.regions[0]
        term = body.terminator
        slots = zip(body.params[1:], term.operands, op.operands[3:], op.results)
        keep = []
        for k, (param, out, init, result) in enumerate(slots):
            if out is param and init.type == param.type:
                replace[param] = replace[result] = init
            else:
                keep.append(k)
        if len(keep) < len(op.results):
            body.params = [body.params[0]] + [body.params[1 + k] for k in keep]
            term.operands = [term.operands[k] for k in keep]
            op.operands = op.operands[:3] + [op.operands[3 + k] for k in keep]
            op.results = [op.results[k] for k in keep]
            op.attrs["result_types"] = [r.type for r in op.results]
    if replace:
        for op in walk(fn.body):
            op.operands = [_resolve(replace, v) for v in op.operands]


def _is_const_number(v, number):
    if v.owner is None or v.owner.prim != "const":
        return False
    value = v.owner.attrs["value"]
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value == number


def _fold_values(fn):
    for op in walk(fn.body):
        if op.prim not in _FOLDABLE:
            continue
        if not all(v.owner is not None and v.owner.prim == "const" for v in op.operands):
            continue
        args = [interp.convert(v.owner.attrs["value"], v.type) for v in op.operands]
        try:
            value = interp._IMPL[op.prim](op, args)[0]
        except (ArithmeticError, ValueError, OverflowError):
            continue
        result = op.result
        op.prim = "const"
        op.operands = []
        op.attrs = {"value": _plain(value), "type": result.type}


def _fold_branches(fn):
    """An `if` on a constant condition is replaced by the ops of the branch it takes; an if
    result that both branches yield as the same outer value is that value (adjoint code
    passes accumulators through branches that do not touch them)."""
    replace = {}
    _splice(fn.body, replace)
    while True:
        found = {}
        for op in walk(fn.body):
            if op.prim != "if":
                continue
            then, other = (r.terminator.operands for r in op.regions)
            for r, a, b in zip(op.results, then, other):
                a, b = _resolve(replace, a), _resolve(replace, b)
                if a is b and r not in replace and a.type == r.type and \
                        not _defined_in(a, op):
                    found[r] = a
        if not found:
            break
        replace.update(found)
    if replace:
        for op in walk(fn.body):
            op.operands = [_resolve(replace, v) for v in op.operands]


def _defined_in(value, op):
    inner = {v for region in op.regions for o in walk(region) for v in o.results}
    inner.update(p for region in op.regions for p in region.params)
    return value in inner


def _splice(block, replace):
    ops = []
    for op in block.ops:
        for region in op.regions:
            _splice(region, replace)
        cond = _resolve(replace, op.operands[0]) if op.prim == "if" else None
        if cond is not None and cond.owner is not None and cond.owner.prim == "const":
            taken = op.regions[0] if cond.owner.attrs["value"] else op.regions[1]
            ops.extend(taken.ops[:-1])
            for r, v in zip(op.results, taken.terminator.operands):
                replace[r] = v
            continue
        ops.append(op)
    block.ops = ops


def _resolve(replace, value):
    while value in replace:
        value = replace[value]
    return value


def _plain(value):
    return value.item() if hasattr(value, "item") else value

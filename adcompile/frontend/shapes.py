"""Shapes known while lowering: a shape mismatch the source already fixes (np.ones((2, 3)) +
np.ones((4, 5))) is a located CompileError instead of a run-time ValueError.

Each array value may have a static shape, a tuple with one entry per axis: an int where the
length is a compile-time constant, None where it is known only at run time. The front end
records it for every op it builds (`infer`), from constant sizes (allocations, np.arange,
np.array literals, reshape) through views, broadcasting, products and reductions; anything
else is unknown. Only contradictions between known lengths are errors: the check never refuses
a program numpy would run.
"""

import math

from adcompile.ir import types as T
from adcompile.ir.prims import ELEMENTWISE


def const_int(v):
    """The value of an integer constant (-1 is a negated one), else None."""
    owner = v.owner
    if owner is not None and owner.prim == "neg":
        inner = const_int(owner.operands[0])
        return None if inner is None else -inner
    if owner is not None and owner.prim == "const" and isinstance(owner.attrs["value"], int) \
            and not isinstance(owner.attrs["value"], bool):
        return owner.attrs["value"]
    return None


def infer(op, known):
    """The static shape of `op`'s array result from its operands' (`known`: value -> shape),
    or raise ValueError with a message when known lengths contradict each other."""
    r = op.results[0].type if op.results else None
    if op.prim in ("load", "store"):
        return _element(known.get(op.operands[0]), op.operands[1:], r)
    if op.prim in ("assign", "iadd"):
        dst, value = (known.get(v) if isinstance(v.type, T.Array) else () for v in op.operands)
        if dst is not None and value is not None:
            try:
                fits = len(value) <= len(dst) and (
                    broadcast([dst, value], len(dst)) == dst or None in dst)
            except ValueError:
                fits = False
            if not fits:
                raise ValueError(f"a value of shape {_show(value)} cannot be stored into "
                                 f"an array (or slice) of shape {_show(dst)} (numpy raises "
                                 f"ValueError)")
        return None
    if not isinstance(r, T.Array):
        if op.prim == "matmul":
            _matmul(*[known.get(v) for v in op.operands])
        return None
    args = [known.get(v) if isinstance(v.type, T.Array) else () for v in op.operands]
    prim = op.prim
    if prim in ELEMENTWISE:
        return broadcast(args, r.ndim)
    if prim == "alloc":  # a negative length raises ValueError when it runs, as in numpy
        return tuple(_length(const_int(d)) for d in op.operands[: op.attrs["ndim"]])
    if prim == "reshape":
        return _reshape(args[0], [const_int(d) for d in op.operands[1:]])
    if prim == "transpose" and args[0] is not None:
        return tuple(args[0][p] for p in op.attrs["perm"])
    if prim == "slice":
        return _slice(args[0], op.attrs["index"], op.operands[1:], r.ndim)
    if prim in ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin"):
        return _reduced(args[0], op.attrs, r.ndim)
    if prim == "matmul":
        return _matmul(args[0], args[1])
    if prim == "stack":
        items = [known.get(v) if isinstance(v.type, T.Array) else () for v in op.operands]
        inner = _same(items, "np.stack() (or np.array) needs items of one shape")
        if inner is None:
            return None
        axis = op.attrs["axis"]
        return inner[:axis] + (len(op.operands),) + inner[axis:]
    if prim == "concatenate":
        return _concatenate(args, op.attrs["axis"])
    if prim in ("copy", "cast", "inv", "cofactor"):
        return args[0]
    if prim == "solve":
        a, b = args
        if a is not None and b is not None and None not in (a[1], b[0]) and a[1] != b[0]:
            raise ValueError(f"np.linalg.solve(): a {_show(a)} matrix and a right-hand side "
                             f"of shape {_show(b)} do not fit (numpy raises ValueError)")
        return b
    if prim == "arange":
        start, stop, step = (_number(v) for v in op.operands)
        if None in (start, stop, step) or step == 0:
            return (None,)
        return (max(0, math.ceil((stop - start) / step)),)
    if prim == "linspace":
        return (const_int(op.operands[2]),)
    return None


def _length(n):
    return None if n is None or n < 0 else n


def _element(shape, indices, r):
    """An element (or row) read or written: constant indices must be in range."""
    if shape is None:
        return None
    for k, (v, n) in enumerate(zip(indices, shape)):
        i = const_int(v)
        if i is not None and n is not None and not -n <= i < n:
            raise ValueError(f"index {i} is out of range for axis {k} of length {n} (numpy "
                             f"raises IndexError)")
    return shape[len(indices):] if isinstance(r, T.Array) else None


def _number(v):
    owner = v.owner
    if owner is not None and owner.prim == "const" and not isinstance(owner.attrs["value"], bool):
        return owner.attrs["value"]
    return None


def broadcast(shapes, ndim):
    """numpy's broadcast of static shapes; ValueError where two known lengths differ and
    neither is 1."""
    out = [1] * ndim
    seen = [False] * ndim
    for shape in shapes:
        if shape is None:
            return None if all(s is None for s in shapes) else _loose(shapes, ndim)
    for shape in shapes:
        offset = ndim - len(shape)
        for i, n in enumerate(shape):
            k = offset + i
            out[k], seen[k] = _merge(out[k], n, seen[k], shapes)
    return tuple(out)


def _merge(current, n, seen, shapes):
    if n == 1:
        return current, seen or False
    if n is None:
        return (None if current == 1 or current is None else current), True
    if current == 1 or current is None:
        return n, True
    if current != n:
        raise ValueError(_mismatch(shapes))
    return current, True


def _loose(shapes, ndim):
    """Some operand shapes are unknown: still check the known ones against each other."""
    broadcast([s for s in shapes if s is not None], ndim)
    return None


def _mismatch(shapes):
    shown = " and ".join("(" + ", ".join("?" if n is None else str(n) for n in s) +
                         ("," if len(s) == 1 else "") + ")" for s in shapes if s)
    return f"these shapes cannot be broadcast together: {shown} (numpy raises ValueError)"


def _show(shape):
    return "(" + ", ".join("?" if n is None else str(n) for n in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _reshape(shape, dims):
    if dims.count(-1) > 1:
        raise ValueError("reshape(): only one size can be -1 (numpy raises ValueError)")
    if None in dims:
        return tuple(d if d is None or d >= 0 else None for d in dims)
    if shape is not None and None not in shape:
        size = 1
        for n in shape:
            size *= n
        if -1 in dims:
            rest = 1
            for d in dims:
                if d != -1:
                    rest *= d
            if dims.count(-1) > 1 or rest == 0 or size % rest:
                raise ValueError(f"cannot reshape an array of {size} elements into shape "
                                 f"{tuple(dims)}")
            return tuple(size // rest if d == -1 else d for d in dims)
        product = 1
        for d in dims:
            product *= d
        if product != size:
            raise ValueError(f"cannot reshape an array of {size} elements into shape "
                             f"{tuple(dims)}")
    return tuple(None if d == -1 else d for d in dims)


def _slice(shape, index, operands, ndim):
    if shape is None:
        return None
    out, axis, values = [], 0, list(operands)
    for item in index:
        if item[0] == "new":
            out.append(1)
            continue
        n = shape[axis] if axis < len(shape) else None
        axis += 1
        if item[0] == "int":
            k = const_int(values.pop(0))
            if k is not None and n is not None and not -n <= k < n:
                raise ValueError(f"index {k} is out of range for an axis of length {n} (numpy "
                                 f"raises IndexError)")
            continue
        bounds = [const_int(values.pop(0)) if present else "default" for present in item[1:]]
        if n is None or None in bounds:
            out.append(None)
            continue
        start, stop, step = (None if b == "default" else b for b in bounds)
        out.append(len(range(*slice(start, stop, step).indices(n))) if step != 0 else None)
    out += list(shape[axis:])
    return tuple(out) if len(out) == ndim else None


def _reduced(shape, attrs, ndim):
    if shape is None:
        return None
    axes = attrs.get("axis")
    axes = range(len(shape)) if axes is None else axes
    if attrs.get("keepdims"):
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _matmul(a, b):
    if a is None or b is None:
        return None
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    k1, k2 = a2[-1], b2[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"@: the inner lengths differ ({k1} and {k2}); numpy raises "
                         f"ValueError")
    batch = broadcast([a2[:-2], b2[:-2]], max(len(a2), len(b2)) - 2) if \
        len(a2) > 2 or len(b2) > 2 else ()
    if batch is None:
        return None
    out = tuple(batch) + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _same(shapes, message):
    if any(s is None for s in shapes):
        return None
    first = shapes[0]
    for s in shapes[1:]:
        if len(s) != len(first):
            return None
        for a, b in zip(s, first):
            if a is not None and b is not None and a != b:
                raise ValueError(message)
    return first


def _concatenate(shapes, axis):
    if any(s is None for s in shapes):
        return None
    out = list(shapes[0])
    total = 0
    for s in shapes:
        for i, (a, b) in enumerate(zip(s, out)):
            if i != axis and a is not None and b is not None and a != b:
                raise ValueError("np.concatenate() needs arrays whose lengths agree except "
                                 "along the axis")
        total = None if total is None or s[axis] is None else total + s[axis]
    out[axis] = total
    return tuple(out)
